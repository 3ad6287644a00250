package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
)

func TestLBSyncDrainsWhatTheRouteRulesOutAndNeverEmptiesTheBalancer(t *testing.T) {
	var backends []string
	for range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		t.Cleanup(s.Close)
		backends = append(backends, s.Listener.Addr().String())
	}
	var mu sync.Mutex
	rv := RouteView{Ready: true, Addresses: []string{backends[0]}, Servers: []routeEntry{
		{Server: "a", Address: backends[0], In: true}, {Server: "b", Address: backends[1]}, {Server: "c", Address: backends[2]}}}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(rv)
	}))
	defer mesh.Close()

	set := lb.LabSettings("127.0.0.1:0", backends)
	set.Admin = "127.0.0.1:0"
	srv, err := lb.New(set, lb.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	defer func() { cancel(); <-done }()

	s := &LBSync{Mesh: mesh.URL, Admin: "http://" + srv.AdminAddr(), Every: time.Second, Logger: slog.New(slog.DiscardHandler)}
	read := func() map[string]lbBackend {
		var got struct {
			Backends []lbBackend `json:"backends"`
		}
		if err := s.admin(ctx, http.MethodGet, "/admin/backends", &got); err != nil {
			t.Fatal(err)
		}
		out := map[string]lbBackend{}
		for _, b := range got.Backends {
			out[b.Address] = b
		}
		return out
	}
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got := read()
	if got[backends[0]].AdminDrained || !got[backends[1]].AdminDrained || !got[backends[2]].AdminDrained {
		t.Errorf("balancer %+v; want a kept, b and c drained", got)
	}

	mu.Lock()
	rv = RouteView{Ready: true, Servers: rv.Servers} // a broken mesh answering an empty route
	mu.Unlock()
	if changes, err := s.Once(ctx); err == nil || len(changes) != 0 {
		t.Errorf("an empty route: changes %v, err %v; want an error and no change", changes, err)
	}
	if read()[backends[0]].AdminDrained {
		t.Error("an empty route drained the last backend")
	}

	mu.Lock()
	rv = RouteView{Ready: true, Addresses: []string{backends[1], backends[2]}, Servers: rv.Servers}
	mu.Unlock()
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got = read()
	if got[backends[0]].AdminDrained || got[backends[1]].AdminDrained || got[backends[2]].AdminDrained {
		t.Errorf("balancer %+v; want b and c back (undrained) and a kept until one of them is in rotation", got)
	}
	poll.UntilNil(t, 10*time.Second, "a drained once b or c is in rotation", func() error {
		if _, err := s.Once(ctx); err != nil {
			return err
		}
		got = read()
		if !got[backends[0]].AdminDrained {
			return fmt.Errorf("balancer %+v", got)
		}
		if !got[backends[1]].InRotation && !got[backends[2]].InRotation {
			t.Fatalf("balancer %+v: a drained while neither b nor c is in rotation", got)
		}
		return nil
	})
}

// startBalancer runs the in-house balancer with backends as its own (lab) backends and an admin
// API on loopback, until the test ends; it returns its admin base URL.
func startBalancer(t *testing.T, backends ...string) string {
	t.Helper()
	set := lb.LabSettings("127.0.0.1:0", backends)
	set.Admin = "127.0.0.1:0"
	srv, err := lb.New(set, lb.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + srv.AdminAddr()
}

// balancerBackends reads the balancer's backends through s's admin client.
func balancerBackends(t *testing.T, s *LBSync) map[string]lbBackend {
	t.Helper()
	var got struct {
		Backends []lbBackend `json:"backends"`
	}
	if err := s.admin(context.Background(), http.MethodGet, "/admin/backends", &got); err != nil {
		t.Fatal(err)
	}
	out := map[string]lbBackend{}
	for _, b := range got.Backends {
		out[b.Address] = b
	}
	return out
}

func httpBackend(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// An address lb-sync added and the mesh stops routing (the route no longer lists it: say the
// forgery that put it there stopped, or its service left the configuration) is drained, then
// removed from the balancer. A backend lb-sync did not add is never removed, even when the mesh
// lists it and then stops.
func TestLBSyncDrainsThenRemovesWhatItAddedOnceTheMeshStopsRoutingIt(t *testing.T) {
	own, added, next := httpBackend(t), httpBackend(t), httpBackend(t)
	var mu sync.Mutex
	rv := RouteView{Ready: true, Addresses: []string{own, added}, Servers: []routeEntry{
		{Server: "a", Address: own, In: true}, {Server: "b", Address: added, In: true}}}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(rv)
	}))
	defer mesh.Close()
	s := &LBSync{Mesh: mesh.URL, Admin: startBalancer(t, own), Every: time.Second, Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()

	changes, err := s.Once(ctx)
	if err != nil || !slices.Equal(changes, []string{"add " + added}) {
		t.Fatalf("first round: %v, %v; want only %s added (%s is the balancer's own)", changes, err, added, own)
	}
	mu.Lock()
	rv = RouteView{Ready: true, Addresses: []string{next}, Servers: []routeEntry{{Server: "c", Address: next, In: true}}}
	mu.Unlock()

	var log []string
	poll.UntilNil(t, 10*time.Second, added+" removed from the balancer", func() error {
		c, err := s.Once(ctx)
		log = append(log, c...)
		if err != nil {
			return err
		}
		if _, ok := balancerBackends(t, s)[added]; ok {
			return fmt.Errorf("still a backend; changes so far %q", log)
		}
		return nil
	})
	drain := slices.IndexFunc(log, func(c string) bool { return strings.HasPrefix(c, "drain "+added) })
	remove := slices.IndexFunc(log, func(c string) bool { return strings.HasPrefix(c, "remove "+added) })
	if drain < 0 || remove < drain {
		t.Errorf("changes %q; want %s drained, then removed", log, added)
	}
	bs := balancerBackends(t, s)
	if b, ok := bs[own]; !ok || b.AdminDrained {
		t.Errorf("the balancer's own backend %s: %+v (present %v); lb-sync did not add it and must leave it alone", own, b, ok)
	}
	if _, ok := bs[next]; !ok {
		t.Errorf("balancer %+v; want %s, now routed, added", bs, next)
	}
	if c, err := s.Once(ctx); err != nil || len(c) != 0 {
		t.Errorf("a settled round: %q, %v; want no change", c, err)
	}
}

// At start-up, before the mesh servers have exchanged reports, the route is not ready and
// lb-sync changes nothing; once they have, only the configured services become backends, never
// a mesh listener (b has no service, so it has no address a balancer may use).
func TestLBSyncAddsNothingUntilTheMeshHasExchangedReports(t *testing.T) {
	svcA := httpBackend(t)
	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	th := DefaultThresholds()
	th.ProbeStaleAfter, th.ReportStaleAfter = 5*time.Second, 5*time.Second
	service, err := ParseService("service", "http://"+svcA+"/")
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]*Node{
		"a": {Name: "a", Listen: lnA.Addr().String(), Listener: lnA, Peers: map[string]string{"b": lnB.Addr().String()},
			Service: service, Key: testKey, ProbeEvery: 200 * time.Millisecond, ProbeTimeout: 150 * time.Millisecond, Thresholds: th},
		"b": {Name: "b", Listen: lnB.Addr().String(), Listener: lnB, Peers: map[string]string{"a": lnA.Addr().String()},
			PeerServices: map[string]Service{"a": service}, Key: testKey, ProbeEvery: 200 * time.Millisecond, ProbeTimeout: 150 * time.Millisecond, Thresholds: th},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, n := range nodes {
		if err := n.Open(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Go(func() { _ = nodes["a"].Serve(ctx) }) // b is not serving yet: nothing exchanged

	own := httpBackend(t)
	s := &LBSync{Mesh: "http://" + nodes["a"].Addr(), Admin: startBalancer(t, own), Every: time.Second}
	meshPorts := []string{lnA.Addr().String(), lnB.Addr().String()}
	poll.Until(t, 10*time.Second, "a's own report in its view", func() bool {
		v := verdictOf(nodes["a"].Snapshot(), "a")
		return !v.LastReport.IsZero()
	})
	for range 3 {
		changes, err := s.Once(ctx)
		if !errors.Is(err, errRouteNotReady) || len(changes) != 0 {
			t.Fatalf("before any exchange: %q, %v; want no change and ErrRouteNotReady", changes, err)
		}
		time.Sleep(nodes["a"].ProbeEvery)
	}
	if bs := balancerBackends(t, s); len(bs) != 1 {
		t.Fatalf("balancer %+v; want only its own backend before the mesh exchanged reports", bs)
	}

	wg.Go(func() { _ = nodes["b"].Serve(ctx) })
	poll.UntilNil(t, 20*time.Second, "a's service added once the mesh exchanged reports", func() error {
		_, err := s.Once(ctx)
		if err != nil {
			return err
		}
		if _, ok := balancerBackends(t, s)[svcA]; !ok {
			return errors.New("not yet a backend")
		}
		return nil
	})
	for addr := range balancerBackends(t, s) {
		if slices.Contains(meshPorts, addr) {
			t.Errorf("mesh listener %s became a backend of the balancer", addr)
		}
	}
	rv := route(t, nodes["a"])
	for _, e := range rv.Servers {
		if e.Server == "b" && e.Address != "" {
			t.Errorf("route entry %+v: b has no service, so no address", e)
		}
	}
}

// The balancer lets a backend the admin API adds or undrains into rotation only after its
// healthy_threshold passing checks, and never fails open to a drained one, so a round that
// undrained the new address and drained the old one in one go left it nothing to serve until
// the new one passed its checks (503s). Across a switch of the route from a to b (b new to the
// balancer), and back (a now drained), a watcher reading the balancer's backends all along never
// sees a moment with none in rotation: the round that adds defers the drains, saying so, and a
// later round drains once the new address is in rotation.
func TestLBSyncNeverLeavesTheBalancerWithoutABackendInRotationAcrossASwitch(t *testing.T) {
	a, b := httpBackend(t), httpBackend(t)
	var mu sync.Mutex
	rv := RouteView{Ready: true, Addresses: []string{a}, Servers: []routeEntry{{Server: "a", Address: a}, {Server: "b", Address: b}}}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(rv)
	}))
	defer mesh.Close()
	logs := &syncbuffer.Buffer{}
	s := &LBSync{Mesh: mesh.URL, Admin: startBalancer(t, a), Every: time.Second, Logger: slog.New(slog.NewJSONHandler(logs, nil))}
	ctx := context.Background()
	poll.Until(t, 10*time.Second, a+" in the balancer's rotation", func() bool { return balancerBackends(t, s)[a].InRotation })
	if c, err := s.Once(ctx); err != nil || len(c) != 0 {
		t.Fatalf("a settled route: %q, %v; want no change", c, err)
	}

	watch := watchRotation(s)

	switchTo := func(from, to string) {
		t.Helper()
		mu.Lock()
		rv.Addresses = []string{to}
		mu.Unlock()
		if c, err := s.Once(ctx); err != nil || !slices.Equal(c, []string{"add " + to}) {
			t.Errorf("the round that finds %s routed: %q, %v; want only %s added (%s drained once %s is in rotation)", to, c, err, to, from, to)
		}
		var log []string
		poll.UntilNil(t, 10*time.Second, from+" drained once "+to+" is in rotation", func() error {
			c, err := s.Once(ctx)
			log = append(log, c...)
			if err != nil {
				return err
			}
			if bs := balancerBackends(t, s); !bs[from].AdminDrained || !bs[to].InRotation {
				return fmt.Errorf("balancer %+v; changes so far %q", bs, log)
			}
			return nil
		})
	}
	switchTo(a, b) // b new to the balancer
	switchTo(b, a) // a drained by the first switch: undrained
	watch.check(t)
	if !strings.Contains(logs.String(), "drains deferred") {
		t.Errorf("no log line saying the drains were deferred:\n%s", logs)
	}
}

// rotationWatcher reads the balancer's backends again and again, in a goroutine of its own,
// counting the reads that found none in rotation.
type rotationWatcher struct {
	stop, done     chan struct{}
	samples, empty int
	examples       []string
	err            error
}

// watchRotation starts watching the balancer s administers until check.
func watchRotation(s *LBSync) *rotationWatcher {
	w := &rotationWatcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			var got struct {
				Backends []lbBackend `json:"backends"`
			}
			if w.err = s.admin(context.Background(), http.MethodGet, "/admin/backends", &got); w.err != nil {
				return
			}
			w.samples++
			if !slices.ContainsFunc(got.Backends, func(b lbBackend) bool { return b.InRotation }) {
				if w.empty++; len(w.examples) < 3 {
					w.examples = append(w.examples, fmt.Sprintf("%+v", got.Backends))
				}
			}
			time.Sleep(time.Millisecond) // the watcher's pace, not a wait for a state
		}
	}()
	return w
}

// check stops the watcher and fails t if any read found no backend in rotation.
func (w *rotationWatcher) check(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.empty > 0 {
		t.Errorf("of %d reads of the balancer's backends, %d had none in rotation, e.g. %s", w.samples, w.empty, strings.Join(w.examples, "; "))
	}
	if w.samples < 10 {
		t.Errorf("the watcher read the balancer's backends %d times; too few to tell", w.samples)
	}
}

// A backend lb-sync added and the mesh no longer lists at all is retired (drained, then removed)
// only once an address the route wants is in the balancer's rotation: here the added one is all
// the balancer serves (its own backend is down), and the route moves to a new address.
func TestLBSyncRetiresABackendOnlyOnceARoutedAddressIsInRotation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // the balancer's own backend: nothing listens, never in rotation
	x, y := httpBackend(t), httpBackend(t)
	var mu sync.Mutex
	rv := RouteView{Ready: true, Addresses: []string{x}, Servers: []routeEntry{{Server: "x", Address: x, In: true}}}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(rv)
	}))
	defer mesh.Close()
	s := &LBSync{Mesh: mesh.URL, Admin: startBalancer(t, down), Every: time.Second, Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	poll.UntilNil(t, 10*time.Second, x+" added and in rotation", func() error {
		if _, err := s.Once(ctx); err != nil {
			return err
		}
		if b := balancerBackends(t, s)[x]; !b.InRotation {
			return fmt.Errorf("%s: %+v", x, b)
		}
		return nil
	})

	watch := watchRotation(s)
	mu.Lock()
	rv = RouteView{Ready: true, Addresses: []string{y}, Servers: []routeEntry{{Server: "y", Address: y, In: true}}}
	mu.Unlock()
	var log []string
	poll.UntilNil(t, 10*time.Second, x+" removed from the balancer", func() error {
		c, err := s.Once(ctx)
		log = append(log, c...)
		if err != nil {
			return err
		}
		if _, ok := balancerBackends(t, s)[x]; ok {
			return fmt.Errorf("still a backend; changes so far %q", log)
		}
		return nil
	})
	watch.check(t)
	if len(log) == 0 || log[0] != "add "+y {
		t.Errorf("changes %q; want %s added first, then %s drained and removed", log, y, x)
	}
}

// lb-sync undoes only its own drains: a routed backend that a deploy (drain: balancer) or an
// operator drained stays drained, so it is not put back in rotation while they wait to stop
// it; one lb-sync drained (drained_by mesh-lb-sync) is undrained once the mesh routes it again,
// unless someone drained it after it.
func TestLBSyncUndrainsOnlyWhatItDrained(t *testing.T) {
	a, b := httpBackend(t), httpBackend(t)
	var mu sync.Mutex
	servers := []routeEntry{{Server: "a", Address: a, In: true}, {Server: "b", Address: b, In: true}}
	rv := RouteView{Ready: true, Addresses: []string{a, b}, Servers: servers}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(rv)
	}))
	defer mesh.Close()
	route := func(addrs ...string) {
		mu.Lock()
		defer mu.Unlock()
		rv = RouteView{Ready: true, Addresses: addrs, Servers: servers}
	}
	s := &LBSync{Mesh: mesh.URL, Admin: startBalancer(t, a, b), Every: time.Second, Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	poll.Until(t, 10*time.Second, "a and b in rotation", func() bool {
		got := balancerBackends(t, s)
		return got[a].InRotation && got[b].InRotation
	})

	drain := func(addr, query string) {
		t.Helper()
		if err := s.admin(ctx, http.MethodPost, "/admin/backends/"+addr+"/drain"+query, nil); err != nil {
			t.Fatal(err)
		}
	}
	drain(b, "?by=deploy") // a deploy drains b at the balancer, the mesh still routes it
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := balancerBackends(t, s)[b]; !got.AdminDrained || got.DrainedBy != "deploy" {
		t.Fatalf("b after a round with b routed: %+v; want it left drained by the deploy", got)
	}
	if err := s.admin(ctx, http.MethodPut, "/admin/backends/"+b, nil); err != nil { // the deploy undrains it
		t.Fatal(err)
	}

	route(a) // the mesh rules b out: lb-sync drains it
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := balancerBackends(t, s)[b]; !got.AdminDrained || got.DrainedBy != drainedByMesh {
		t.Fatalf("b ruled out by the mesh: %+v; want drained by %s", got, drainedByMesh)
	}
	route(a, b) // and routes it again: lb-sync undoes its drain
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := balancerBackends(t, s)[b]; got.AdminDrained {
		t.Fatalf("b routed again after lb-sync's own drain: %+v; want it undrained", got)
	}

	route(a)
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	drain(b, "") // an operator drains it too, after lb-sync: theirs now
	route(a, b)
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := balancerBackends(t, s)[b]; !got.AdminDrained || got.DrainedBy != "admin" {
		t.Fatalf("b drained by an operator after lb-sync: %+v; want it left drained by admin", got)
	}
	if err := s.admin(ctx, http.MethodPost, "/admin/backends/"+b+"/drain?by=Not%20A%20Name", nil); err == nil ||
		!strings.Contains(err.Error(), `by "Not A Name": must be 1 to 32 lower-case letters`) {
		t.Fatalf("a drain with a bad ?by=: %v, want 400 naming the rule", err)
	}
}

// Against a balancer too old to report drained_by, lb-sync still undoes the drains it made itself
// (it remembers them), and leaves alone those it did not make.
func TestLBSyncUndrainsItsOwnDrainsOnABalancerWithoutDrainedBy(t *testing.T) {
	a, b, c := "127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"
	var mu sync.Mutex
	drained := map[string]bool{c: true} // c: drained by someone before lb-sync started
	lbAdmin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		addr := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/admin/backends/"), "/drain")
		switch r.Method {
		case http.MethodGet:
			type be struct {
				Address      string `json:"address"`
				InRotation   bool   `json:"in_rotation"`
				AdminDrained bool   `json:"admin_drained"`
			}
			var out struct {
				Backends []be `json:"backends"`
			}
			for _, x := range []string{a, b, c} {
				out.Backends = append(out.Backends, be{Address: x, InRotation: !drained[x], AdminDrained: drained[x]})
			}
			_ = json.NewEncoder(w).Encode(out)
		case http.MethodPost:
			drained[addr] = true // ?by= ignored, no drained_by reported
		case http.MethodPut:
			drained[addr] = false
		}
	}))
	defer lbAdmin.Close()
	servers := []routeEntry{{Server: "a", Address: a, In: true}, {Server: "b", Address: b, In: true}, {Server: "c", Address: c, In: true}}
	rv := RouteView{Ready: true, Addresses: []string{a}, Servers: servers}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(rv)
	}))
	defer mesh.Close()
	s := &LBSync{Mesh: mesh.URL, Admin: lbAdmin.URL, Every: time.Second, Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	bDrained := drained[b]
	rv = RouteView{Ready: true, Addresses: []string{a, b, c}, Servers: servers} // b heals; c is routed too
	mu.Unlock()
	if !bDrained {
		t.Fatal("b, ruled out by the mesh, was not drained")
	}
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if drained[b] || !drained[c] {
		t.Fatalf("after the mesh routes b and c again: b drained %v (lb-sync's own drain: want undone), c drained %v (not lb-sync's: want kept)",
			drained[b], drained[c])
	}
}

// A balancer with a few hundred backends answers GET /admin/backends with more than a mebibyte
// (some 5 KB a backend: its transitions and latency histogram). lb-sync reads it whole and
// syncs: the answer was cut at 1 MiB and every round failed as "not the balancer's JSON".
func TestLBSyncReadsTheBackendsOfABigBalancer(t *testing.T) {
	routed := httpBackend(t)
	backends := []string{routed}
	for i := range 300 {
		// nothing listens: unhealthy, still listed (routed's ephemeral port may fall among them)
		if a := fmt.Sprintf("127.0.0.1:%d", 40001+i); a != routed {
			backends = append(backends, a)
		}
	}
	ruledOut := backends[1]
	rv := RouteView{Ready: true, Addresses: []string{routed}, Servers: []routeEntry{
		{Server: "a", Address: routed, In: true}, {Server: "b", Address: ruledOut}}}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(rv) }))
	defer mesh.Close()
	s := &LBSync{Mesh: mesh.URL, Admin: startBalancer(t, backends...), Every: time.Second, Logger: slog.New(slog.DiscardHandler)}
	poll.UntilNil(t, 20*time.Second, "b drained once a is in rotation", func() error {
		if _, err := s.Once(context.Background()); err != nil {
			if strings.Contains(err.Error(), "not the balancer's JSON") {
				t.Fatal(err)
			}
			return err
		}
		if b := balancerBackends(t, s)[ruledOut]; !b.AdminDrained {
			return fmt.Errorf("%s: %+v, want drained", ruledOut, b)
		}
		return nil
	})
}
