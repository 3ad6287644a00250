package edge

import (
	"bufio"
	"context"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// handedOffEdge is a forwarder on a fake clock (its drain window never passes unless the test
// advances it) with a connection held open through it to a relay, whose Serve context ended for
// a hand-off to an upgraded process.
type handedOffEdge struct {
	fwd   *Forwarder
	held  *bufio.Reader
	echo  func(msg string)
	close func()
	done  chan error
}

func startHandedOff(t *testing.T, f *Forwarder) handedOffEdge {
	t.Helper()
	relay := startRelay(t, &Relay{Backend: startBackend(t, nil), Trusted: []netip.Prefix{loopback}})
	var handed atomic.Bool
	f.Listen, f.Origins, f.Clock = "127.0.0.1:0", []string{relay.Addr().String()}, clock.NewFake(time.Unix(0, 0))
	f.Drain, f.Shutdown, f.HandedOff = drainWindow, shutdown, handed.Load
	ForTests(f)
	if err := f.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := handedOffEdge{fwd: f, done: make(chan error, 1)}
	go func() { e.done <- f.Serve(ctx) }()
	held := dialFrom(t, "127.0.0.1", f.Addr().String())
	e.held = bufio.NewReader(held)
	e.echo = func(msg string) { echoLine(t, held, e.held, msg) }
	e.close = func() { _ = held.Close() }
	e.echo("before the hand-off")
	handed.Store(true) // as handoff.Upgrader does: HandedOff is true before the context ends
	cancel()
	return e
}

// wait is Serve's error once the held connection is closed.
func (e handedOffEdge) wait(t *testing.T) {
	t.Helper()
	e.close()
	select {
	case err := <-e.done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return once the last connection closed")
	}
}

// After a hand-off the old edge stops accepting at once, without the drain window (the address
// is served by the new process on the same sockets), and its open connections go on within the
// shutdown budget.
func TestAfterAHandOffTheOldEdgeStopsAcceptingAtOnce(t *testing.T) {
	e := startHandedOff(t, &Forwarder{})
	addr := e.fwd.Addr().String()
	poll.Until(t, deadline, "the old edge to stop accepting, with no drain window", func() bool { return refused(addr) })
	e.echo("the open connection after the hand-off")
	e.wait(t)
}

// After a hand-off the old edge closes its admin and metrics listeners at once: the new process
// shares their sockets, and a request answered here (a write, a scrape of a draining edge)
// would be answered by a process about to exit.
func TestAfterAHandOffTheOldEdgeClosesItsAdminAndMetricsAtOnce(t *testing.T) {
	e := startHandedOff(t, &Forwarder{Admin: "127.0.0.1:0", Metrics: "127.0.0.1:0"})
	admin, metrics := e.fwd.AdminAddr().String(), e.fwd.MetricsAddr().String()
	poll.Until(t, deadline, "the old edge's admin and metrics listeners to close while it still forwards", func() bool {
		return refused(admin) && refused(metrics)
	})
	e.echo("the open connection after the hand-off")
	e.wait(t)
}

// As an upgrade starts, the edge writes what its admin API changed (upstreams drained, and who
// drained them; added, removed) to a file only its owner reads, and refuses writes until the
// attempt ends; the new process starts from the configured origins with those changes on top.
func TestAdminStateGoesToTheUpgradedProcessAndWritesWaitMeanwhile(t *testing.T) {
	a, b, c, d := startUpstream(t, "a"), startUpstream(t, "b"), startUpstream(t, "c"), startUpstream(t, "d")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr, d.addr}, Admin: "127.0.0.1:0", Check: looseChecks})
	for _, w := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/admin/upstreams/" + a.addr + "/drain?by=someone", http.StatusOK},
		{"POST", "/admin/upstreams/" + d.addr + "/drain", http.StatusOK},
		{"DELETE", "/admin/upstreams/" + d.addr, http.StatusNoContent},
		{"PUT", "/admin/upstreams/" + c.addr, http.StatusCreated},
	} {
		if code, body := admin(t, fwd, w.method, w.path); code != w.want {
			t.Fatalf("%s %s: %d %s, want %d", w.method, w.path, code, body, w.want)
		}
	}

	path := filepath.Join(t.TempDir(), "run", "edge.pid.admin.json")
	if err := fwd.PrepareHandoff(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, %v; want mode 0600", fi, err)
	}
	if code, body := admin(t, fwd, "PUT", "/admin/upstreams/127.0.0.3:4001"); code != http.StatusServiceUnavailable || !strings.Contains(body, "upgrade") {
		t.Fatalf("PUT during the upgrade: %d %s, want 503 saying an upgrade is under way", code, body)
	}
	if code, _ := admin(t, fwd, "GET", "/admin/upstreams"); code != http.StatusOK {
		t.Fatalf("GET during the upgrade: %d, want 200", code)
	}
	if _, ok, err := ReadHandoff(path, os.Getpid()+1); ok || err != nil {
		t.Fatalf("a state written by another process: ok %v, %v; want it ignored", ok, err)
	}
	st, ok, err := ReadHandoff(path, os.Getpid())
	if !ok || err != nil {
		t.Fatalf("ReadHandoff: ok %v, %v", ok, err)
	}

	// The new process, its config unchanged.
	next := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr, d.addr}, Check: looseChecks, Inherit: &st})
	var got []string
	for _, u := range next.Upstreams() {
		got = append(got, u.Address)
	}
	if want := []string{a.addr, b.addr, c.addr}; !slices.Equal(got, want) {
		t.Fatalf("the new process's upstreams: %v, want %v (d removed, c added)", got, want)
	}
	if st := upstreamState(next, a.addr); !st.AdminDrained || st.State != adminapi.Draining || st.InRotation || st.DrainedBy != "someone" {
		t.Fatalf("a in the new process: %+v, want held drained by someone", st)
	}
	poll.Until(t, deadline, "b and c in rotation in the new process", func() bool {
		return upstreamState(next, b.addr).InRotation && upstreamState(next, c.addr).InRotation
	})
	for i := 0; i < 6; i++ {
		if got := through(t, next.Addr().String()); got != "b" && got != "c" {
			t.Fatalf("connection %d through the new process answered by %q, want b or c", i, got)
		}
	}

	// The upgrade failed: the old process takes writes again.
	fwd.HandoffFailed()
	if code, body := admin(t, fwd, "PUT", "/admin/upstreams/127.0.0.3:4001"); code != http.StatusCreated {
		t.Fatalf("PUT after a failed upgrade: %d %s, want 201", code, body)
	}
}

// A configured upstream is out of rotation until its first check, so the health listener refuses
// from Open until an upstream passes one: an edge whose upstreams are all dead never looks up to
// the DNS health checker, and an upstream never checked good takes no traffic by failing open.
func TestHealthRefusesFromOpenUntilAnUpstreamPassesItsFirstCheck(t *testing.T) {
	dead := startUpstream(t, "dead")
	dead.kill()
	fwd := ForTests(&Forwarder{Listen: "127.0.0.1:0", Origins: []string{dead.addr}, Health: "127.0.0.1:0",
		Check: UpstreamCheck{Interval: time.Hour, Timeout: time.Second}})
	if err := fwd.Open(); err != nil {
		t.Fatal(err)
	}
	health := fwd.HealthAddr().String()
	if !refused(health) {
		t.Fatal("health accepts after Open with the only upstream dead")
	}
	serveUntilCleanup(t, fwd.Serve)
	if st := upstreamState(fwd, dead.addr); st.InRotation || st.State != adminapi.Unhealthy || fwd.Healthy() {
		t.Fatalf("the dead upstream after its first check: %+v (edge healthy %v), want unhealthy", st, fwd.Healthy())
	}
	if !refused(health) {
		t.Fatal("health accepts while the edge serves with no upstream ever in rotation")
	}

	a := startUpstream(t, "a")
	live := startForwarder(t, &Forwarder{Origins: []string{dead.addr, a.addr}, Health: "127.0.0.1:0", Check: looseChecks})
	if refused(live.HealthAddr().String()) {
		t.Fatal("health refuses after the first good check of an upstream")
	}
	if st := upstreamState(live, a.addr); !st.InRotation {
		t.Fatalf("a after its first good check: %+v, want in rotation at once", st)
	}
}

// The admin state's upstreams get traffic, so the new process takes only a file no other user
// could have written or read (a pid file may sit in a sticky directory others can write to): one
// readable or writable by others is refused, naming it, and nothing of it is applied.
func TestAdminStateOthersCouldWriteIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.pid.admin.json")
	planted := `{"pid":` + strconv.Itoa(os.Getpid()) + `,"added":["10.66.66.66:443"]}`
	if err := os.WriteFile(path, []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if st, ok, err := ReadHandoff(path, os.Getpid()); ok || err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a 0666 admin state: %+v, ok %v, %v; want it refused naming the file", st, ok, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, ok, err := ReadHandoff(path, os.Getpid()); !ok || err != nil || !slices.Equal(st.Added, []string{"10.66.66.66:443"}) {
		t.Fatalf("the same file 0600: %+v, ok %v, %v; want it read", st, ok, err)
	}
}
