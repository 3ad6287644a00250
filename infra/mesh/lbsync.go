package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// LBSync makes the in-house balancer (`zero502 lb`) take its backends from a mesh route, through
// the balancer's admin write API only: every Every it reads the mesh's GET /route and, for the
// servers the mesh knows, adds or undrains (PUT /admin/backends/{addr}) every address in
// rotation, then drains (POST /admin/backends/{addr}/drain) every one the mesh ruled out. A
// server the mesh rules out leaves the balancer's rotation without a restart; it is drained,
// not removed, so healing is an undrain. Backends the mesh does not know are never touched.
//
// The balancer never has an empty pool because of the mesh: the route is never empty, additions
// go before drains, and a route with no address changes nothing.
type LBSync struct {
	// Mesh is a mesh node's base URL (http://host:port); Admin the balancer's admin base URL.
	Mesh, Admin string
	// Token is the admin API's bearer token ("" on loopback).
	Token  string
	Every  time.Duration
	Client *http.Client // nil: a client with a 5 s timeout
	Clock  clock.Clock  // nil: clock.Real
	Logger *slog.Logger // nil: slog.Default()
}

// lbBackend is the part of the balancer's GET /admin/backends the sync reads.
type lbBackend struct {
	Address      string `json:"address"`
	InRotation   bool   `json:"in_rotation"`
	AdminDrained bool   `json:"admin_drained"`
}

// Run syncs every Every until ctx ends; a failed round is logged and retried the next round.
func (s *LBSync) Run(ctx context.Context) {
	clk := s.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	for {
		if changes, err := s.Once(ctx); err != nil && ctx.Err() == nil {
			s.logger().Warn("mesh lb sync: round failed; the balancer keeps its backends", "err", err)
		} else if len(changes) > 0 {
			s.logger().Info("mesh lb sync: balancer changed", "changes", changes)
		}
		select {
		case <-ctx.Done():
			return
		case <-clk.After(s.Every):
		}
	}
}

// Once is one round; it returns the changes made ("add 10.0.0.5:443", "drain ...").
func (s *LBSync) Once(ctx context.Context) ([]string, error) {
	rv, err := FetchRoute(s.client(), strings.TrimRight(s.Mesh, "/"))
	if err != nil {
		return nil, err
	}
	if len(rv.Addresses) == 0 {
		return nil, fmt.Errorf("the mesh route %s has no address; nothing changed (a balancer is never emptied by the mesh)", s.Mesh)
	}
	var have struct {
		Backends []lbBackend `json:"backends"`
	}
	if err := s.admin(ctx, http.MethodGet, "/admin/backends", &have); err != nil {
		return nil, err
	}
	by := map[string]lbBackend{}
	for _, b := range have.Backends {
		by[b.Address] = b
	}
	var changes []string
	for _, a := range rv.Addresses {
		if b, ok := by[a]; !ok || b.AdminDrained {
			if err := s.admin(ctx, http.MethodPut, "/admin/backends/"+url.PathEscape(a), nil); err != nil {
				return changes, err
			}
			changes = append(changes, "add "+a)
		}
	}
	for _, e := range rv.Servers {
		b, ok := by[e.Address]
		if !ok || b.AdminDrained || slices.Contains(rv.Addresses, e.Address) {
			continue
		}
		if err := s.admin(ctx, http.MethodPost, "/admin/backends/"+url.PathEscape(e.Address)+"/drain", nil); err != nil {
			return changes, err
		}
		changes = append(changes, fmt.Sprintf("drain %s (%s: %s)", e.Address, e.Server, e.Why))
	}
	return changes, nil
}

func (s *LBSync) admin(ctx context.Context, method, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.Admin, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("balancer admin %s: %w", s.Admin, err)
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return fmt.Errorf("balancer admin %s %s: %w; is `zero502 lb --admin` listening there?", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("balancer admin %s %s answered %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if into != nil {
		if err := json.Unmarshal(body, into); err != nil {
			return fmt.Errorf("balancer admin %s %s: not the balancer's JSON: %w", method, path, err)
		}
	}
	return nil
}

func (s *LBSync) client() *http.Client {
	if s.Client == nil {
		return &http.Client{Timeout: 5 * time.Second}
	}
	return s.Client
}

func (s *LBSync) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
