package balancer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/zero502/zero502/infra/adminapi"
)

var _ Rotation = (*InHouse)(nil)

// Add puts target in the LB's set (PUT /admin/backends/{target}): a new one joins out of
// rotation until its health checks pass healthy_threshold times; an admin-drained one is
// undrained; one already there is left as it is.
func (b *InHouse) Add(ctx context.Context, target string) error {
	return b.write(ctx, http.MethodPut, target, "", nil, http.StatusOK, http.StatusCreated)
}

// DrainedByDeploy is who the deployer's drains say they come from (?by=, the balancer's
// drained_by): an operator's drain is recorded as adminapi.DrainedByAdmin and mesh lb-sync's as
// its own, so each undoes only its drains and a person sees which drains a deploy made.
const DrainedByDeploy = "deploy"

// Drain takes target out of rotation (POST /admin/backends/{target}/drain?by=deploy): no new
// requests, in-flight ones finish; the LB keeps it out until Add undrains it.
func (b *InHouse) Drain(ctx context.Context, target string) error {
	return b.write(ctx, http.MethodPost, target, "/drain?by="+DrainedByDeploy, nil, http.StatusOK)
}

// Remove forgets target (DELETE /admin/backends/{target}); an unknown target is already gone.
// The LB refuses (409) while the target is in rotation: Drain it first.
func (b *InHouse) Remove(ctx context.Context, target string) error {
	return b.write(ctx, http.MethodDelete, target, "", nil, http.StatusNoContent, http.StatusOK, http.StatusNotFound)
}

// Drained is true when target is out of rotation with nothing in flight, or gone from the LB.
func (b *InHouse) Drained(ctx context.Context, target string) (bool, error) {
	all, err := b.targets(ctx)
	if err != nil {
		return false, fmt.Errorf("target %s: %w", target, err)
	}
	for _, be := range all {
		if be.Address == target {
			return !be.InRotation && be.InFlight == 0, nil
		}
	}
	return true, nil
}

// SetWeight sets target's share of new requests (PUT /admin/backends/{target}/weight): its
// weight over the sum of the weights in rotation (Weighter).
func (b *InHouse) SetWeight(ctx context.Context, target string, weight int) error {
	if b.kind == "edge" {
		return fmt.Errorf("edge %s splits connections evenly: %w", b.admin, ErrNoView)
	}
	path := b.what + "/" + url.PathEscape(target) + "/weight"
	code, data, err := b.do(ctx, http.MethodPut, path, adminapi.WeightChange{Weight: weight}.Body())
	switch {
	case err != nil:
		return fmt.Errorf("target %s: %w", target, err)
	case code == http.StatusNotFound:
		return fmt.Errorf("%s admin %s: set the weight of %s: %w", b.kind, b.admin, target, ErrUnknownTarget)
	case code != http.StatusOK:
		return fmt.Errorf("%s admin PUT %s%s: target %s: %d %s: %.300s", b.kind, b.admin, path, target,
			code, http.StatusText(code), strings.TrimSpace(string(data)))
	}
	return nil
}

// write sends one change for target (body, when not nil, as JSON) and accepts the statuses in ok.
func (b *InHouse) write(ctx context.Context, method, target, suffix string, body io.Reader, ok ...int) error {
	path := b.what + "/" + url.PathEscape(target) + suffix
	code, data, err := b.do(ctx, method, path, body)
	if err != nil {
		return fmt.Errorf("target %s: %w", target, err)
	}
	for _, c := range ok {
		if code == c {
			return nil
		}
	}
	err = fmt.Errorf("%s admin %s %s%s: target %s: %d %s: %.300s", b.kind, method, b.admin, path, target,
		code, http.StatusText(code), strings.TrimSpace(string(data)))
	if code == http.StatusNotFound {
		return fmt.Errorf("%w: %w", ErrUnknownTarget, err)
	}
	return err
}
