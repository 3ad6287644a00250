package mesh

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/clock"
)

// LBSync makes the in-house balancer (`zero502 lb`) take its backends from a mesh route, through
// the balancer's admin write API only: every Every it reads the mesh's GET /route and, for the
// servers the mesh knows, adds or undrains (PUT /admin/backends/{addr}) every address in
// rotation, then drains (POST /admin/backends/{addr}/drain?by=mesh-lb-sync) every one the mesh
// ruled out. A server the mesh rules out leaves the balancer's rotation without a restart; it
// is drained, not removed, so healing is an undrain, of its own drains only (drainedByMesh).
//
// LBSync remembers the backends it added. Once the mesh no longer lists one of them at all (its
// service left the mesh's configuration), it drains it, then deletes it (DELETE
// /admin/backends/{addr}) in a later round, once the balancer reports nothing in flight to it.
// Backends it did not add (the balancer's own) are never removed.
//
// The balancer is never left with nothing in rotation because of the mesh: the route is never
// empty, a route with no address changes nothing, additions go before drains, and the drains
// (retirements' too) wait until at least one address the route wants is in the balancer's
// rotation. The balancer lets an added or undrained backend in only after healthy_threshold
// passing checks, so when the route moves to addresses that are new or drained there, the round
// that adds them drains nothing (it logs that the drains are deferred) and a later round drains
// once one of them has passed its checks. Nor does a route that is not Ready (at start-up,
// before the mesh servers have exchanged reports) change anything: LBSync waits for it.
//
// The route is authenticated with the mesh's Key (auth.go): every GET /route carries a fresh
// random challenge and LBSync takes only an answer signed with the key for that challenge. An
// unsigned answer, a bad signature or a replayed one (signed for another challenge) changes
// nothing and is an error saying so, so whoever answers on the node's address (a local user
// binding the port while the node restarts, someone on the path) cannot put an address into
// the balancer. Without a key LBSync runs only against a Mesh on loopback (Validate), as a node
// without a key runs only on loopback.
type LBSync struct {
	// Mesh is a mesh node's base URL (http://host:port); Admin the balancer's admin base URL.
	Mesh, Admin string
	// Key is the mesh's shared key, the nodes' --key-file: the route must be signed with it.
	// Nil is allowed only when Mesh is on loopback.
	Key []byte
	// Token is the admin API's bearer token ("" on loopback).
	Token string
	// FromFlag and KeyFlag name the flags that set Mesh and Key, for Validate's errors (""
	// --from and --key-file, lb-sync's own).
	FromFlag, KeyFlag string
	Every             time.Duration
	Client            *http.Client // nil: a client with a 5 s timeout
	Clock             clock.Clock  // nil: clock.Real
	Logger            *slog.Logger // nil: slog.Default()

	mu    sync.Mutex
	added map[string]bool // the backends this LBSync added, until it removes them
	// drained are the backends this LBSync drained and has not undrained: how it knows its own
	// drains on a balancer too old to report drained_by.
	drained map[string]bool
}

// errRouteNotReady is returned by Once while the mesh's route does not rest on exchanged reports
// yet (RouteView.Ready false): nothing is changed.
var errRouteNotReady = errors.New("the mesh route is not ready: its servers have not exchanged reports yet")

// lbBackend is the part of the balancer's GET /admin/backends the sync reads.
type lbBackend struct {
	Address      string `json:"address"`
	State        string `json:"state"`
	InRotation   bool   `json:"in_rotation"`
	AdminDrained bool   `json:"admin_drained"`
	DrainedBy    string `json:"drained_by"`
	InFlight     int64  `json:"in_flight"`
}

// drainedByMesh is who LBSync's drains say they come from (?by=, the balancer's drained_by): it
// undrains only a backend it drained itself. One a deploy (drain: balancer) or an operator
// drained stays drained, routed or not, until they undrain it: undoing their drain would put it
// back in rotation while they wait to stop it.
const drainedByMesh = "mesh-lb-sync"

// Validate returns what is wrong with s's mesh URL and key, naming the flag of `zero502 mesh
// lb-sync`, the value and the rule: Mesh must be an http(s) URL with a host; without a Key its
// host must be loopback (anyone else who answers there could forge the route); a Key must be a
// mesh key (minKeyLength bytes or more).
func (s *LBSync) Validate() error {
	from, keyFile := cmp.Or(s.FromFlag, "--from"), cmp.Or(s.KeyFlag, "--key-file")
	u, err := url.Parse(s.Mesh)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: must be a mesh server's http:// URL with a host, e.g. http://127.0.0.1:7001", from, s.Mesh)
	}
	if s.Key != nil {
		if len(s.Key) < minKeyLength {
			return fmt.Errorf("mesh key: %d bytes (%s), must be %d or more: give lb-sync the mesh servers' own key (the file of their --key-file)", len(s.Key), keyFile, minKeyLength)
		}
		return nil
	}
	if adminapi.Loopback(net.JoinHostPort(u.Hostname(), "0")) {
		return nil
	}
	return fmt.Errorf("%w: %s %s is not on loopback, so anyone who answers there (a local user on the node's port, someone on the path) "+
		"could forge the route and put any address into the balancer: give lb-sync the mesh servers' key with %s FILE or $ZERO502_MESH_KEY "+
		"(the same as every `mesh serve`)", errNoKey, from, s.Mesh, keyFile)
}

// Run syncs every Every until ctx ends; a failed round is logged and retried the next round.
func (s *LBSync) Run(ctx context.Context) {
	clk := s.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	for {
		changes, err := s.Once(ctx)
		switch {
		case errors.Is(err, errRouteNotReady):
			s.logger().Info("mesh lb sync: waiting for the mesh's first exchanged reports; the balancer keeps its backends", "mesh", s.Mesh)
		case err != nil && ctx.Err() == nil:
			s.logger().Warn("mesh lb sync: round failed; the balancer keeps its backends", "err", err)
		}
		if len(changes) > 0 {
			s.logger().Info("mesh lb sync: balancer changed", "changes", changes)
		}
		select {
		case <-ctx.Done():
			return
		case <-clk.After(s.Every):
		}
	}
}

// Once is one round; it returns the changes made ("add 10.0.0.5:443", "drain ...",
// "remove ...").
func (s *LBSync) Once(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.added == nil {
		s.added, s.drained = map[string]bool{}, map[string]bool{}
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w; nothing changed", err)
	}
	rv, err := readRoute(ctx, s.client(), strings.TrimRight(s.Mesh, "/"), s.Key)
	if err != nil {
		return nil, err
	}
	if !rv.Ready {
		return nil, fmt.Errorf("%s: %w; nothing changed", s.Mesh, errRouteNotReady)
	}
	if len(rv.Addresses) == 0 {
		return nil, fmt.Errorf("the mesh route %s has no address; nothing changed (a balancer is never emptied by the mesh)", s.Mesh)
	}
	by, err := s.backends(ctx)
	if err != nil {
		return nil, err
	}
	var changes, othersDrains []string
	for _, a := range rv.Addresses {
		if b, ok := by[a]; !ok || b.AdminDrained {
			if ok && !s.ownDrain(a, b) {
				othersDrains = append(othersDrains, fmt.Sprintf("%s (drained by %s)", a,
					cmp.Or(b.DrainedBy, "someone, before this lb-sync started (the balancer reports no drained_by: upgrade it)")))
				continue
			}
			if err := s.admin(ctx, http.MethodPut, "/admin/backends/"+url.PathEscape(a), nil); err != nil {
				return changes, err
			}
			if !ok {
				s.added[a] = true
			}
			delete(s.drained, a)
			changes = append(changes, "add "+a)
		}
	}
	// A drain takes a backend out of rotation at once, and an address just added or undrained is
	// not in it yet (the balancer lets it in after healthy_threshold passing checks, and never
	// fails open to a drained one): drains wait for one routed address in rotation. After adds
	// the balancer is read again, so the drains rest on its state after them.
	if len(changes) > 0 {
		if by, err = s.backends(ctx); err != nil {
			return changes, err
		}
	}
	serving := slices.ContainsFunc(rv.Addresses, func(a string) bool { return by[a].InRotation })
	var deferred []string
	listed := map[string]bool{}
	for _, e := range rv.Servers {
		if e.Address == "" {
			continue // no service: nothing a balancer serves
		}
		listed[e.Address] = true
		b, ok := by[e.Address]
		if !ok || b.AdminDrained || slices.Contains(rv.Addresses, e.Address) {
			continue
		}
		if !serving {
			deferred = append(deferred, e.Address)
			continue
		}
		if err := s.admin(ctx, http.MethodPost, "/admin/backends/"+url.PathEscape(e.Address)+"/drain?by="+drainedByMesh, nil); err != nil {
			return changes, err
		}
		s.drained[e.Address] = true
		changes = append(changes, fmt.Sprintf("drain %s (%s: %s)", e.Address, e.Server, e.Why))
	}
	for _, a := range slices.Sorted(maps.Keys(s.added)) {
		if listed[a] || slices.Contains(rv.Addresses, a) {
			continue
		}
		if b, ok := by[a]; ok && !b.AdminDrained && !serving {
			deferred = append(deferred, a) // its retirement starts with a drain
			continue
		}
		c, err := s.retire(ctx, a, by)
		if c != "" {
			changes = append(changes, c)
		}
		if err != nil {
			return changes, err
		}
	}
	if len(othersDrains) > 0 {
		s.logger().Info("mesh lb sync: routed addresses held drained by someone else are left drained (a deploy or an operator "+
			"drained them; they undrain them)", "drained", othersDrains)
	}
	if len(deferred) > 0 {
		routed := make([]string, 0, len(rv.Addresses))
		for _, a := range rv.Addresses {
			routed = append(routed, fmt.Sprintf("%s (%s)", a, cmp.Or(by[a].State, "not a backend")))
		}
		s.logger().Info("mesh lb sync: drains deferred until one of the routed addresses passes the balancer's health checks "+
			"(none is in its rotation yet: it takes an added or undrained backend only after healthy_threshold passing checks, "+
			"so a drain now could leave it nothing to serve); a later round drains them",
			"deferred", deferred, "routed", routed)
	}
	return changes, nil
}

// ownDrain says whether the drained backend b at a is held drained by this LBSync: its
// drained_by says so, or, from a balancer too old to report drained_by, this process drained it.
func (s *LBSync) ownDrain(a string, b lbBackend) bool {
	if b.DrainedBy != "" {
		return b.DrainedBy == drainedByMesh
	}
	return s.drained[a]
}

// backends reads the balancer's GET /admin/backends, by address.
func (s *LBSync) backends(ctx context.Context) (map[string]lbBackend, error) {
	var have struct {
		Backends []lbBackend `json:"backends"`
	}
	if err := s.admin(ctx, http.MethodGet, "/admin/backends", &have); err != nil {
		return nil, err
	}
	by := make(map[string]lbBackend, len(have.Backends))
	for _, b := range have.Backends {
		by[b.Address] = b
	}
	return by, nil
}

// retire takes a backend this LBSync added, which the mesh no longer lists, out of the
// balancer one step per round: drain it, then, once drained with nothing in flight, delete it.
func (s *LBSync) retire(ctx context.Context, a string, by map[string]lbBackend) (string, error) {
	b, ok := by[a]
	switch {
	case !ok: // removed by someone else: forget it
		delete(s.added, a)
		delete(s.drained, a)
		return "", nil
	case !b.AdminDrained:
		if err := s.admin(ctx, http.MethodPost, "/admin/backends/"+url.PathEscape(a)+"/drain?by="+drainedByMesh, nil); err != nil {
			return "", err
		}
		s.drained[a] = true
		return "drain " + a + " (no longer routed by the mesh; removed once nothing is in flight)", nil
	case b.InFlight > 0:
		return "", nil // the next round deletes it
	}
	if err := s.admin(ctx, http.MethodDelete, "/admin/backends/"+url.PathEscape(a), nil); err != nil {
		return "", err
	}
	delete(s.added, a)
	delete(s.drained, a)
	return "remove " + a + " (no longer routed by the mesh)", nil
}

// maxAdminAnswer bounds an admin API answer LBSync reads: GET /admin/backends takes some 5 to 8 KB
// a backend (its transitions and latency histogram), so thousands of backends fit.
const maxAdminAnswer = 32 << 20

func (s *LBSync) admin(ctx context.Context, method, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.Admin, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("balancer admin %s: %w", s.Admin, err)
	}
	req.Header.Set(adminapi.ClientHeader, "1") // a program, not a browser (adminapi.Access)
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return fmt.Errorf("balancer admin %s %s: %w; is `zero502 lb --admin` listening there?", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer+1))
	if err != nil {
		return fmt.Errorf("balancer admin %s %s: %w", method, path, err)
	}
	if len(body) > maxAdminAnswer {
		return fmt.Errorf("balancer admin %s %s: answer above %d bytes, not read further: not the balancer's admin API", method, path, maxAdminAnswer)
	}
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

// client is Client (a 5 s timeout by default) following no redirect: the route is the
// configured node's own answer (another server holding the key would sign its own), and the
// admin API answers where it was asked.
func (s *LBSync) client() *http.Client {
	c := http.Client{Timeout: 5 * time.Second}
	if s.Client != nil {
		c = *s.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func (s *LBSync) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
