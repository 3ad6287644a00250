package deployer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

var _ Rotation = (*InHouse)(nil)

// Add puts target in the LB's set (PUT /admin/backends/{target}): a new one joins out of
// rotation until its health checks pass healthy_threshold times; an admin-drained one is
// undrained; one already there is left as it is.
func (b *InHouse) Add(ctx context.Context, target string) error {
	return b.write(ctx, http.MethodPut, target, "", http.StatusOK, http.StatusCreated)
}

// Drain takes target out of rotation (POST /admin/backends/{target}/drain): no new requests,
// in-flight ones finish; the LB keeps it out until Add undrains it.
func (b *InHouse) Drain(ctx context.Context, target string) error {
	return b.write(ctx, http.MethodPost, target, "/drain", http.StatusOK)
}

// Remove forgets target (DELETE /admin/backends/{target}); an unknown target is already gone.
// The LB refuses (409) while the target is in rotation: Drain it first.
func (b *InHouse) Remove(ctx context.Context, target string) error {
	return b.write(ctx, http.MethodDelete, target, "", http.StatusNoContent, http.StatusOK, http.StatusNotFound)
}

// Drained is true when target is out of rotation with nothing in flight, or gone from the LB.
func (b *InHouse) Drained(ctx context.Context, target string) (bool, error) {
	all, err := b.list(ctx)
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

// write sends one change for target and accepts the statuses in ok.
func (b *InHouse) write(ctx context.Context, method, target, suffix string, ok ...int) error {
	path := b.targets() + "/" + url.PathEscape(target) + suffix
	code, data, err := b.do(ctx, method, path)
	if err != nil {
		return fmt.Errorf("target %s: %w", target, err)
	}
	for _, c := range ok {
		if code == c {
			return nil
		}
	}
	return fmt.Errorf("in-house LB admin %s %s%s: target %s: %d %s: %.300s", method, b.admin, path, target,
		code, http.StatusText(code), strings.TrimSpace(string(data)))
}
