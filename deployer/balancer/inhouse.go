package balancer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/handoff"
)

// InHouse is the client of the in-house LB's admin API (zero502 lb): GET /admin/backends for the
// targets' states and GET /admin/settings for the live numbers, and the write API for Rotation
// (balancer_inhouse_rotation.go) (docs/lb.md: Admin API).
type InHouse struct {
	admin  string // host:port
	token  string
	client *http.Client
	// what is the admin API's collection of targets: /admin/backends on an LB,
	// /admin/upstreams on an edge (the same wire types and semantics).
	what string
	// kind names the balancer in output and errors: "in-house LB" or "edge".
	kind string
}

// NewInHouse returns a client of the admin API at admin (host:port). token, when not empty, is
// sent as a bearer token (required when the admin listener is not on loopback).
func NewInHouse(admin, token string) *InHouse {
	return &InHouse{admin: admin, token: token, client: &http.Client{Timeout: 3 * time.Second},
		what: "/admin/backends", kind: "in-house LB"}
}

// NewEdgeAdmin returns a client of an edge's admin API at admin (zero502 edge forward
// --admin): the LB instances behind it are its upstreams (GET /admin/upstreams), with the same
// wire types and write API as an LB's backends.
func NewEdgeAdmin(admin, token string) *InHouse {
	b := NewInHouse(admin, token)
	b.what, b.kind = "/admin/upstreams", "edge"
	return b
}

// Name says which admin API this reads.
func (b *InHouse) Name() string {
	if b.kind == "edge" {
		return "edge " + b.admin
	}
	return "inhouse " + b.admin
}

// TargetState returns the LB's view of target, matched by its configured address.
func (b *InHouse) TargetState(ctx context.Context, target string) (TargetState, error) {
	// The one target's entry (GET …/{addr}): a deploy polls it every few tens of milliseconds
	// per host, and the whole list of a 50-host fleet cost the LB more CPU than its users did.
	// An LB or edge without the route (405) or a 404 falls through to the list.
	code, data, err := b.do(ctx, http.MethodGet, b.what+"/"+url.PathEscape(target), nil)
	if err != nil {
		return TargetState{}, err
	}
	if code == http.StatusOK {
		var be adminapi.BackendStatus
		if err := json.Unmarshal(data, &be); err != nil {
			return TargetState{}, fmt.Errorf("%s admin %s%s/%s: not the admin API's JSON: %w", b.kind, b.admin, b.what, target, err)
		}
		return TargetState{State: string(be.State), InRotation: be.InRotation, Since: be.Since}, nil
	}
	all, err := b.targets(ctx)
	if err != nil {
		return TargetState{}, err
	}
	for _, be := range all {
		if be.Address == target {
			return TargetState{State: string(be.State), InRotation: be.InRotation, Since: be.Since}, nil
		}
	}
	known := make([]string, 0, len(all))
	for _, be := range all {
		known = append(known, be.Address)
	}
	return TargetState{}, fmt.Errorf("%s at %s: target %s: %w (it has %s); "+
		"start it with the same config or add the target (PUT %s/%[3]s)",
		b.kind, b.admin, target, ErrUnknownTarget, strings.Join(known, ", "), b.what)
}

// targets reads the admin API's list of targets: {"backends": […]} on an LB, {"upstreams":
// […]} on an edge.
func (b *InHouse) targets(ctx context.Context) ([]adminapi.BackendStatus, error) {
	var body struct {
		Backends  []adminapi.BackendStatus `json:"backends"`
		Upstreams []adminapi.BackendStatus `json:"upstreams"`
	}
	if err := b.get(ctx, b.what, &body); err != nil {
		return nil, err
	}
	return append(body.Backends, body.Upstreams...), nil
}

// Outcomes is every target's cumulative outcomes at the LB (OutcomeViewer). An edge publishes
// none (an L4 forwarder sees no status): ErrNoView.
func (b *InHouse) Outcomes(ctx context.Context) (Outcomes, error) {
	if b.kind == "edge" {
		return nil, fmt.Errorf("edge %s forwards bytes and sees no answers: %w", b.admin, ErrNoView)
	}
	all, err := b.targets(ctx)
	if err != nil {
		return nil, err
	}
	out := Outcomes{}
	for _, be := range all {
		out[be.Address] = append(out[be.Address], be)
	}
	return out, nil
}

// Settings returns the LB's live listen address and numbers (GET /admin/settings): the ones it
// reports, adminapi.InHouseNumbers.
func (b *InHouse) Settings(ctx context.Context) (Settings, error) {
	var raw adminapi.Settings
	if b.kind == "edge" {
		return Settings{}, fmt.Errorf("edge %s: its upstream check numbers are not compared: %w", b.admin, ErrNoView)
	}
	if err := b.get(ctx, "/admin/settings", &raw); err != nil {
		return Settings{}, err
	}
	return Settings{Listen: raw.Listen, BalancerNumbers: raw.BalancerNumbers, Reported: raw.Reported}, nil
}

func (b *InHouse) get(ctx context.Context, path string, into any) error {
	code, data, err := b.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s admin %s%s: %d %s: %.200s", b.kind, b.admin, path, code, http.StatusText(code), data)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s admin %s%s: not the admin API's JSON: %w", b.kind, b.admin, path, err)
	}
	return nil
}

// do sends one admin request (body, when not nil, as JSON) and returns the status and body; 401
// and 403 are errors that say to set the token. A write the balancer refuses because it is
// upgrading in place (adminapi.Gate: 503 with Retry-After while it hands its admin state to the
// new process) is sent again after the Retry-After, as long as an attempt may last
// (handoff.DefaultTimeout) and ctx allows: failing it would fail the deploy's step for a second's
// hand-off.
func (b *InHouse) do(ctx context.Context, method, path string, body io.Reader) (int, []byte, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = io.ReadAll(body); err != nil {
			return 0, nil, fmt.Errorf("%s admin %s %s%s: %w", b.kind, method, b.admin, path, err)
		}
	}
	deadline := time.Now().Add(handoff.DefaultTimeout)
	for {
		code, data, retry, err := b.once(ctx, method, path, payload)
		if err != nil || retry <= 0 || time.Now().Add(retry).After(deadline) {
			return code, data, err
		}
		select {
		case <-ctx.Done():
			return code, data, nil
		case <-time.After(retry):
		}
	}
}

// once is one try of do; retry is the Retry-After of a write the balancer refused while it
// upgrades (0 for any other answer).
func (b *InHouse) once(ctx context.Context, method, path string, payload []byte) (code int, data []byte, retry time.Duration, err error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+b.admin+path, body)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s admin %s: %w", b.kind, b.admin, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(adminapi.ClientHeader, "1") // a program, not a browser (adminapi.Access)
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s admin API at %s (balancer.admin) does not answer: %w; is it running with this config?", b.kind, b.admin, err)
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s admin %s %s%s: %w", b.kind, method, b.admin, path, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return 0, nil, 0, fmt.Errorf("%s admin %s %s%s: %s: set balancer.admin_token to its token", b.kind, method, b.admin, path, resp.Status)
	}
	if resp.StatusCode == http.StatusServiceUnavailable && method != http.MethodGet && method != http.MethodHead {
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			retry = time.Duration(secs) * time.Second
		}
	}
	return resp.StatusCode, data, retry, nil
}
