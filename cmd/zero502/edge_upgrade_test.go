package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// An in-place upgrade of an edge while the old process is still alive (a connection held open
// through it keeps it in its shutdown budget): the admin API's changes made before the upgrade
// go on in the new process, every admin request and scrape after it is answered by the new
// process (so no write is lost when the old one exits), and every new connection is forwarded
// by the new process (the old one stopped accepting at once, with no drain window).
func TestEdgeUpgradeHandsTheAdminStateOverAndTheOldEdgeLetsGo(t *testing.T) {
	bin, dir := upgradeRig(t)
	a, b, c, d := namedOrigin(t, "a"), namedOrigin(t, "b"), namedOrigin(t, "c"), namedOrigin(t, "d")
	listen, admin, metrics := freeAddr(t), freeAddr(t), freeAddr(t)
	pidFile := filepath.Join(dir, "run", "edge.pid")
	logPath := filepath.Join(dir, "edge.log")
	old := startServer(t, bin, logPath, pidFile, "edge", "forward", "--listen", listen,
		"--origin", a, "--origin", b, "--origin", d, "--admin", admin, "--metrics", metrics,
		"--drain", "8s", "--shutdown", "20s", "--check-interval", "250ms", "--check-timeout", "200ms", "--pid-file", pidFile)
	poll.Until(t, 10*time.Second, "the edge forwards", func() bool { return answeredBy(listen) != "" })

	for _, w := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/admin/upstreams/" + a + "/drain", http.StatusOK},
		{"POST", "/admin/upstreams/" + d + "/drain", http.StatusOK},
		{"DELETE", "/admin/upstreams/" + d, http.StatusNoContent},
		{"PUT", "/admin/upstreams/" + c, http.StatusCreated},
	} {
		if code := adminDo(t, w.method, "http://"+admin+w.path); code != w.want {
			t.Fatalf("%s %s: %d, want %d", w.method, w.path, code, w.want)
		}
	}

	// A connection through the old process, kept open over the upgrade.
	held, err := net.DialTimeout("tcp", listen, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldR := bufio.NewReader(held)
	if name := ask(t, held, heldR, true); name == "" {
		t.Fatal("the held connection got no answer")
	}

	out, code := runBin(t, bin, "lb", "upgrade", "--pid-file", pidFile)
	if code != 0 {
		t.Fatalf("upgrade of the edge: exit %d, %q\n%s", code, out, readLog(t, dir, "edge.log"))
	}
	select {
	case <-old.exited:
		t.Fatalf("the old edge exited with a connection open\n%s", readLog(t, dir, "edge.log"))
	default:
	}

	// The new process alone answers admin requests, and holds b out now: a connection the old
	// process still accepted would go to b (in rotation there).
	if code := adminDo(t, "POST", "http://"+admin+"/admin/upstreams/"+b+"/drain"); code != http.StatusOK {
		t.Fatalf("drain b after the upgrade: %d", code)
	}
	var added []string
	for i := range 6 {
		u := fmt.Sprintf("127.0.0.3:%d", 4001+i)
		if code := adminDo(t, "PUT", "http://"+admin+"/admin/upstreams/"+u); code != http.StatusCreated {
			t.Fatalf("PUT %s after the upgrade: %d, want 201 (a new upstream of the new process)", u, code)
		}
		added = append(added, u)
	}
	for i := range 10 {
		if got := scrapeDraining(t, metrics); got != "0" {
			t.Fatalf("scrape %d after the upgrade: zero502_edge_draining %s, want 0 (answered by the new process)", i, got)
		}
	}
	for i := range 20 {
		if got := answeredBy(listen); got != "c" {
			t.Fatalf("connection %d after the upgrade answered by %q, want c (the new process's one upstream in rotation)\n%s",
				i, got, readLog(t, dir, "edge.log"))
		}
	}
	if name := ask(t, held, heldR, false); name == "" {
		t.Fatal("the held connection broke at the upgrade")
	}
	_ = held.Close()
	if code := old.waitExit(t, 15*time.Second); code != 0 {
		t.Fatalf("the old edge exited %d, want 0\n%s", code, readLog(t, dir, "edge.log"))
	}

	var list struct {
		Upstreams []adminapi.BackendStatus `json:"upstreams"`
	}
	getJSON(t, "http://"+admin+"/admin/upstreams", &list)
	drained := map[string]bool{}
	var got []string
	for _, u := range list.Upstreams {
		got = append(got, u.Address)
		drained[u.Address] = u.AdminDrained
	}
	if want := append([]string{a, b, c}, added...); !slices.Equal(got, want) {
		t.Fatalf("upstreams once the old edge exited: %v, want %v (d removed before the upgrade, c before it, the rest after)", got, want)
	}
	if !drained[a] || !drained[b] || drained[c] {
		t.Fatalf("admin-drained once the old edge exited: %v, want a and b", drained)
	}
}

// Who drained an upstream (POST .../drain?by=NAME, drained_by) goes with the drain to the
// process an upgrade starts, so an automaton that undoes only its own drains (mesh lb-sync) still
// tells an operator's drain from its own after an edge upgrade.
func TestEdgeUpgradeKeepsWhoDrainedEachUpstream(t *testing.T) {
	bin, dir := upgradeRig(t)
	a, b, c := namedOrigin(t, "a"), namedOrigin(t, "b"), namedOrigin(t, "c")
	listen, admin := freeAddr(t), freeAddr(t)
	pidFile := filepath.Join(dir, "run", "edge.pid")
	old := startServer(t, bin, filepath.Join(dir, "edge.log"), pidFile, "edge", "forward", "--listen", listen,
		"--origin", a, "--origin", b, "--origin", c, "--admin", admin,
		"--check-interval", "250ms", "--check-timeout", "200ms", "--pid-file", pidFile)
	poll.Until(t, 10*time.Second, "the edge forwards", func() bool { return answeredBy(listen) != "" })
	for _, path := range []string{"/admin/upstreams/" + a + "/drain?by=someone", "/admin/upstreams/" + b + "/drain"} {
		if code := adminDo(t, "POST", "http://"+admin+path); code != http.StatusOK {
			t.Fatalf("POST %s: %d, want 200", path, code)
		}
	}
	drainedBy := func() map[string]string {
		var list struct {
			Upstreams []adminapi.BackendStatus `json:"upstreams"`
		}
		getJSON(t, "http://"+admin+"/admin/upstreams", &list)
		by := map[string]string{}
		for _, u := range list.Upstreams {
			if u.AdminDrained {
				by[u.Address] = u.DrainedBy
			}
		}
		return by
	}
	want := map[string]string{a: "someone", b: adminapi.DrainedByAdmin}
	if got := drainedBy(); !maps.Equal(got, want) {
		t.Fatalf("drained_by before the upgrade: %v, want %v", got, want)
	}

	if out, code := runBin(t, bin, "lb", "upgrade", "--pid-file", pidFile); code != 0 {
		t.Fatalf("upgrade of the edge: exit %d, %q\n%s", code, out, readLog(t, dir, "edge.log"))
	}
	if code := old.waitExit(t, 15*time.Second); code != 0 {
		t.Fatalf("the old edge exited %d, want 0\n%s", code, readLog(t, dir, "edge.log"))
	}
	if pid := readPID(t, pidFile); pid == old.Process.Pid {
		t.Fatalf("the pid file still names the old edge %d after it exited", pid)
	}
	if got := drainedBy(); !maps.Equal(got, want) {
		t.Fatalf("drained_by from the new edge (the old one exited): %v, want %v, as before the upgrade\n%s",
			got, want, readLog(t, dir, "edge.log"))
	}
}

// namedOrigin is an HTTP server behind a PROXY-header-reading listener on 127.0.0.1 that
// answers every request with its name.
func namedOrigin(t *testing.T, name string) string {
	return serveName(t, name, func(ln net.Listener) net.Listener { return &proxyproto.Listener{Listener: ln} })
}

// serveName is an HTTP server on 127.0.0.1 answering every request 200 with name, on a listener
// wrap makes of its own (nil: as it is).
func serveName(t *testing.T, name string, wrap func(net.Listener) net.Listener) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return addr
}

// answeredBy is the name of the origin that answered a GET through the edge at addr on a new
// connection; "" when it failed.
func answeredBy(addr string) string {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(body)
}

// ask sends a GET on the kept-alive connection c and returns the answering origin's name.
func ask(t *testing.T, c net.Conn, r *bufio.Reader, keepAlive bool) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	hdr := ""
	if !keepAlive {
		hdr = "Connection: close\r\n"
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: edge-test\r\n"+hdr+"\r\n"); err != nil {
		return ""
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// adminDo sends one admin API request on a new connection and returns its status.
func adminDo(t *testing.T, method, url string) int {
	t.Helper()
	return adminSend(t, method, url, "")
}

// scrapeDraining is the value of zero502_edge_draining in a scrape of the edge's metrics on a
// new connection.
func scrapeDraining(t *testing.T, addr string) string {
	t.Helper()
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "zero502_edge_draining{") {
			f := strings.Fields(line)
			return f[len(f)-1]
		}
	}
	t.Fatalf("no zero502_edge_draining in the scrape:\n%s", body)
	return ""
}
