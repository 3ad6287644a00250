package lb

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// serveOn serves body to every request on ln until the test ends.
func serveOn(t *testing.T, ln net.Listener, body string) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// A backend given by a name with several addresses, the first of which refuses: both engines
// reach it where its health checks do (the checks, like net.Dial, try each address in turn), so
// a backend healthy by its checks serves on the event loops too.
func TestBackendByNameServesWhereItsChecksConnect(t *testing.T) {
	// the backend listens on 127.0.0.3:P only; 127.0.0.1:P refuses
	ln, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Skip("127.0.0.3 not usable:", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		c.Close()
		t.Skip("127.0.0.1:port taken")
	}
	serveOn(t, ln, "ok")

	var ips atomic.Pointer[[]net.IP]
	// the refusing address first (a resolver's order, RFC 6724 sorting, decides the first)
	list := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.3")}
	ips.Store(&list)
	fakeDNS(t, &ips)
	name := "backend.lb.test:" + strconv.Itoa(port)
	l := startSteadyLB(t, fastSettings(name))
	c := client()
	for i := 0; i < 5; i++ {
		code, body, _ := get(t, c, l.url("/"))
		if code != 200 {
			st := l.Backends()[0].Status()
			t.Fatalf("request %d: %d %q; want 200 (backend %s: state %s, transitions %+v)", i, code, body, name, st.State, st.Transitions)
		}
	}
}

// A backend given by name whose record moves to another address (a replaced instance), the old
// one gone: both engines follow the name to the new address, with no health check in between.
func TestBackendByNameFollowsItsRecord(t *testing.T) {
	ln1, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Skip(err)
	}
	port := strconv.Itoa(ln1.Addr().(*net.TCPAddr).Port)
	ln2, err := net.Listen("tcp", "127.0.0.4:"+port)
	if err != nil {
		ln1.Close()
		t.Skip(err)
	}
	old := serveOn(t, ln1, "old")
	var ips atomic.Pointer[[]net.IP]
	l1 := []net.IP{net.ParseIP("127.0.0.3")}
	ips.Store(&l1)
	fakeDNS(t, &ips)
	l := startSteadyLB(t, fastSettings("backend.lb.test:"+port))
	c := client()
	if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "old" {
		t.Fatalf("before the move: %d %q", code, body)
	}
	// the record moves to the new instance, the old one goes away
	l2 := []net.IP{net.ParseIP("127.0.0.4")}
	ips.Store(&l2)
	serveOn(t, ln2, "new")
	old.Close()
	c.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		code, body, _ := get(t, c, l.url("/"))
		if code != 200 || body != "new" {
			st := l.Backends()[0].Status()
			t.Fatalf("request %d after the move: %d %q; want 200 \"new\" (state %s, last transition %+v)", i, code, body, st.State, st.Transitions[len(st.Transitions)-1])
		}
	}
}

// A backend given by name whose lookup fails for a moment (a resolver blip): both engines
// connect where the last connection by its name got meanwhile, and no engine keeps the
// failure: once the name resolves and its checks pass again, both engines serve it.
func TestBackendByNameSurvivesAResolverBlip(t *testing.T) {
	port, ips, good := backendOnName(t)
	none := []net.IP{}
	l := startSteadyLB(t, fastSettings("backend.lb.test:"+port))
	b := l.Backends()[0] // in rotation, and its checker waits on the fake clock
	ips.Store(&none)     // the blip: the name has no address for a moment
	c := client()
	if code, body, _ := get(t, c, l.url("/")); code != 200 {
		t.Errorf("during the blip: %d %q; want 200 from its last address", code, body)
	}
	ips.Store(&good) // resolved again
	// its checks pass again: healthy_threshold good checks
	for i := 0; i < 2; i++ {
		if tr, ok := b.Record(httpProbe("/health", time.Second)(context.Background(), b), zeroTime, l.check.th); ok {
			l.changed(b, tr)
		}
	}
	if !b.InRotation() {
		t.Fatalf("checks pass but not back in rotation: %s %s (transitions %+v)", b.Status().State, b.Status().LastError, b.Status().Transitions)
	}
	c.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		if code, body, _ := get(t, c, l.url("/")); code != 200 {
			st := b.Status()
			t.Fatalf("request %d after the blip, backend healthy by its checks: %d %q; want 200 (last transition %+v)", i, code, body, st.Transitions[len(st.Transitions)-1])
		}
	}
}

// A backend given by name that no connection by its name has reached yet (on the event loops:
// no address to connect to without a lookup): the request is served all the same, by name, and
// the address it reached is kept for the next ones.
func TestBackendByNameBeforeAnyAddressIsKnown(t *testing.T) {
	port, _, _ := backendOnName(t)
	l := startSteadyLB(t, fastSettings("backend.lb.test:"+port))
	b := l.Backends()[0]
	b.reached.Store(nil) // as before any check passed
	c := client()
	for i := 0; i < 3; i++ {
		if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q; want 200 \"ok\"", i, code, body)
		}
	}
	if p := b.reached.Load(); p == nil || p.String() != "127.0.0.3:"+port {
		t.Errorf("reached address after serving: %v, want 127.0.0.3:%s", p, port)
	}
	if st := b.Status(); st.State != Healthy {
		t.Errorf("backend %s, want healthy", st.State)
	}
}

// backendOnName is a backend answering "ok" on 127.0.0.3:port, and the fake DNS answering
// backend.lb.test with good (127.0.0.3) until the test stores other addresses in ips.
func backendOnName(t *testing.T) (port string, ips *atomic.Pointer[[]net.IP], good []net.IP) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Skip(err)
	}
	serveOn(t, ln, "ok")
	ips = &atomic.Pointer[[]net.IP]{}
	good = []net.IP{net.ParseIP("127.0.0.3")}
	ips.Store(&good)
	fakeDNS(t, ips)
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), ips, good
}
