package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/lb/adminapi"
)

// InHouse is the client of the in-house LB's admin API (zero502 lb): GET /admin/backends for the
// targets' states and GET /admin/settings for the live numbers, and the write API for Rotation
// (balancer_inhouse_rotation.go) (README: Admin API).
type InHouse struct {
	// Targets is the path of the admin API's target collection: /admin/backends (an LB; empty
	// means that) or /admin/upstreams (an edge: zero502 edge forward --admin, same wire type and
	// write semantics), so the same client rolls LB instances behind edges.
	Targets string

	admin  string // host:port
	token  string
	client *http.Client
}

// DefaultTargets is the LB's target collection.
const DefaultTargets = "/admin/backends"

func (b *InHouse) targets() string {
	if b.Targets == "" {
		return DefaultTargets
	}
	return b.Targets
}

// list is every target's view. An LB answers {"backends": [...]}, an edge {"upstreams": [...]}.
func (b *InHouse) list(ctx context.Context) ([]adminapi.BackendStatus, error) {
	var body struct {
		Backends  []adminapi.BackendStatus `json:"backends"`
		Upstreams []adminapi.BackendStatus `json:"upstreams"`
	}
	if err := b.get(ctx, b.targets(), &body); err != nil {
		return nil, err
	}
	return append(body.Backends, body.Upstreams...), nil
}

// NewInHouse returns a client of the admin API at admin (host:port). token, when not empty, is
// sent as a bearer token (required when the admin listener is not on loopback).
func NewInHouse(admin, token string) *InHouse {
	return &InHouse{admin: admin, token: token, client: &http.Client{Timeout: 3 * time.Second}}
}

// Name says which admin API this reads.
func (b *InHouse) Name() string { return "inhouse " + b.admin }

// TargetState returns the LB's view of target, matched by its configured address.
func (b *InHouse) TargetState(ctx context.Context, target string) (TargetState, error) {
	all, err := b.list(ctx)
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
	return TargetState{}, fmt.Errorf("in-house LB at %s: target %s: %w (it has %s); "+
		"start the LB with the same config (zero502 lb --config FILE) or add the target (PUT %s/%[2]s)",
		b.admin, target, ErrUnknownTarget, strings.Join(known, ", "), b.targets())
}

// Settings returns the LB's live numbers.
func (b *InHouse) Settings(ctx context.Context) (Settings, error) {
	var raw adminapi.SettingsView
	if err := b.get(ctx, "/admin/settings", &raw); err != nil {
		return Settings{}, err
	}
	s := Settings{Listen: raw.Listen, HealthPath: raw.HealthPath, UnhealthyThreshold: raw.UnhealthyThreshold,
		HealthyThreshold: raw.HealthyThreshold, MaxHeaderBytes: raw.MaxHeaderBytes}
	for _, f := range []struct {
		name string
		raw  string
		dst  *time.Duration
	}{
		{"interval", raw.Interval, &s.Interval},
		{"timeout", raw.Timeout, &s.Timeout},
		{"idle_timeout", raw.IdleTimeout, &s.IdleTimeout},
		{"connect_timeout", raw.ConnectTimeout, &s.ConnectTimeout},
		{"header_timeout", raw.HeaderTimeout, &s.HeaderTimeout},
	} {
		if f.raw == "" {
			continue
		}
		d, err := time.ParseDuration(f.raw)
		if err != nil {
			return Settings{}, fmt.Errorf("in-house LB at %s: /admin/settings %s %q is not a duration: %w", b.admin, f.name, f.raw, err)
		}
		*f.dst = d
	}
	return s, nil
}

func (b *InHouse) get(ctx context.Context, path string, into any) error {
	code, data, err := b.do(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("in-house LB admin %s%s: %d %s: %.200s", b.admin, path, code, http.StatusText(code), data)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("in-house LB admin %s%s: not the admin API's JSON: %w", b.admin, path, err)
	}
	return nil
}

// do sends one admin request and returns the status and body; 401 and 403 are errors that say
// to set the token.
func (b *InHouse) do(ctx context.Context, method, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+b.admin+path, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("in-house LB admin %s: %w", b.admin, err)
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("in-house LB admin API at %s (balancer.admin) does not answer: %w; is zero502 lb running with this config?", b.admin, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("in-house LB admin %s %s%s: %w", method, b.admin, path, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return 0, nil, fmt.Errorf("in-house LB admin %s %s%s: %s: set balancer.admin_token to the LB's token", method, b.admin, path, resp.Status)
	}
	return resp.StatusCode, data, nil
}
