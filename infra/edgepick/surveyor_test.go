package edgepick

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/alert"
	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/edge"
	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/testrig/alerttest"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// serveOrigin is a TLS origin behind edges on ln: it reads their PROXY headers and finishes the
// handshake.
func serveOrigin(t *testing.T, pki testPKI, ln net.Listener) {
	t.Helper()
	cs := &conns{}
	t.Cleanup(func() { _ = ln.Close(); cs.closeAll() })
	tln := tls.NewListener(&origin.Listener{Listener: ln, Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, &tls.Config{Certificates: []tls.Certificate{pki.cert}})
	go func() {
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			cs.add(c)
			go func() { defer c.Close(); _ = c.(*tls.Conn).Handshake(); _, _ = io.Copy(io.Discard, c) }()
		}
	}()
}

// startForwarder is a real edge.Forwarder on listen in front of origin.
func startForwarder(t *testing.T, listen, origin string) {
	t.Helper()
	f := &edge.Forwarder{Listen: listen, Origins: []string{origin}, ConnectTimeout: time.Second}
	if err := f.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestSurveyAlertsOnceWhenAForwarderIsUpAndItsBackendDeadAndOnceWhenItRecovers(t *testing.T) {
	pki := newPKI(t)
	originLn, _, _ := listenLoopback(t)
	serveOrigin(t, pki, originLn)
	deadLn, _, deadOrigin := listenLoopback(t)
	deadLn.Close() // edge b's backend is dead until the test starts it

	// One name, two edges on the same port: 127.0.0.1 and 127.0.0.2.
	port := closedPort(t).Port()
	a, b := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), port)
	startForwarder(t, a.String(), originLn.Addr().String())
	startForwarder(t, b.String(), deadOrigin.String())

	recv := &alerttest.Receiver{}
	hook := httptest.NewServer(recv)
	defer hook.Close()
	var lines []SurveyRound
	var mu sync.Mutex
	s := &Surveyor{
		Name:     fmt.Sprintf("edges.example.test:%d", port),
		Resolver: fixedResolver{ips: []netip.Addr{a.Addr(), b.Addr()}},
		Probe:    TLSProbe(pki.client(), time.Second),
		Interval: 20 * time.Millisecond,
		Alerts:   &alert.Sender{URL: hook.URL, Backoff: backoff.Backoff{Base: time.Millisecond}},
		OnRound:  func(r SurveyRound) { mu.Lock(); lines = append(lines, r); mu.Unlock() },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	poll.Until(t, 10*time.Second, "the backend-dead alert", func() bool { return len(recv.List()) >= 1 })
	if got := recv.List(); got[0] != b.String()+" "+EdgeBackendDead {
		t.Fatalf("alerts %v; want %s backend-dead", got, b)
	}
	_, n := s.Last()
	poll.Until(t, 10*time.Second, "three more rounds", func() bool { _, m := s.Last(); return m >= n+3 })
	if got := recv.List(); len(got) != 1 {
		t.Errorf("alerts %v; a standing state is alerted once", got)
	}
	metrics := scrape(t, s)
	for _, want := range []string{
		`zero502_edge_backend_dead{edge="` + b.String() + `",name="` + s.Name + `"} 1`,
		`zero502_edge_healthy{edge="` + a.String() + `",name="` + s.Name + `"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}

	ln, err := net.Listen("tcp", deadOrigin.String())
	if err != nil {
		t.Fatal(err)
	}
	serveOrigin(t, pki, ln)
	poll.Until(t, 10*time.Second, "the recovered alert", func() bool { return len(recv.List()) >= 2 })
	if got := recv.List(); len(got) != 2 || got[1] != b.String()+" recovered" {
		t.Errorf("alerts %v; want backend-dead then recovered for %s", got, b)
	}
	mu.Lock()
	defer mu.Unlock()
	last := lines[len(lines)-1]
	if len(last.Edges) != 2 || last.Edges[0].Connect <= 0 || last.Edges[0].Handshake <= 0 {
		t.Errorf("last round %+v; want both edges with connect and handshake times", last)
	}
}

// An edge alerted as backend-dead that goes down (not alerted: the DNS health check's job) and
// then healthy gets its recovery alert, so the page its first alert opened is closed. An edge
// only ever down, then healthy, is alerted neither way.
func TestSurveyAlertsTheRecoveryOfABackendDeadEdgeThatWasDownBetween(t *testing.T) {
	a := netip.MustParseAddrPort("192.0.2.1:443")
	// each round's state of a, confirmed after 2 (alert.DefaultConfirm)
	script := []string{"dead", "dead", "down", "down", "ok", "ok", "down", "down", "ok", "ok"}
	round := 0
	probe := func(_ context.Context, addr netip.AddrPort) Measurement {
		m := Measurement{Addr: addr}
		switch script[round] {
		case "dead":
			m.Connect, m.Err = time.Millisecond, errors.New("handshake: EOF")
		case "down":
			m.Err = errors.New("connect: connection refused")
		case "ok":
			m.Connect, m.Handshake = time.Millisecond, time.Millisecond
		}
		return m
	}
	recv := &alerttest.Receiver{}
	hook := httptest.NewServer(recv)
	defer hook.Close()
	s := &Surveyor{Name: "edges.example.test:443", Resolver: fixedResolver{ips: []netip.Addr{a.Addr()}}, Probe: probe,
		Alerts: &alert.Sender{URL: hook.URL, Backoff: backoff.Backoff{Base: time.Millisecond}}, Tracker: &alert.Tracker{Initial: EdgeHealthy}}
	for round = range script {
		s.round(context.Background(), time.Now())
	}
	want := []string{a.String() + " " + EdgeBackendDead, a.String() + " recovered"}
	if got := recv.List(); !slices.Equal(got, want) {
		t.Errorf("after backend-dead → down → healthy → down → healthy, alerts %v; want %v", got, want)
	}
	if r, ok := recv.Find(a.String(), "recovered"); ok && (r.From != edgeDown || !strings.Contains(r.Summary, "alerted backend-dead, down since")) {
		t.Errorf("recovered alert from %q: %s; want it to say it was backend-dead, then down", r.From, r.Summary)
	}
}

func scrape(t *testing.T, s *Surveyor) string {
	t.Helper()
	srv := httptest.NewServer(s.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// A webhook slow to answer does not hold the survey's rounds: alerts are delivered beside them,
// so every edge is still measured each Interval (its metrics and its recovery with it) while an
// alert is out. With Rounds, what the last round alerted is still delivered before Run returns.
func TestSurveyKeepsMeasuringWhileAnAlertIsBeingDelivered(t *testing.T) {
	a := netip.MustParseAddrPort("192.0.2.1:443")
	probe := func(_ context.Context, addr netip.AddrPort) Measurement {
		return Measurement{Addr: addr, Connect: time.Millisecond, Err: errors.New("handshake: EOF")}
	}
	posted, release := make(chan struct{}, 1), make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case posted <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hook.Close()
	defer close(release)
	s := &Surveyor{Name: "edges.example.test:443", Resolver: fixedResolver{ips: []netip.Addr{a.Addr()}}, Probe: probe,
		Interval: 20 * time.Millisecond, Alerts: &alert.Sender{URL: hook.URL, Attempts: 1, Timeout: time.Minute}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-posted:
	case <-time.After(10 * time.Second):
		t.Fatal("no backend-dead alert posted within 10s")
	}
	_, n := s.Last()
	poll.Until(t, 5*time.Second, "three more rounds while the webhook holds the alert", func() bool { _, m := s.Last(); return m >= n+3 })

	recv := &alerttest.Receiver{}
	ok := httptest.NewServer(recv)
	defer ok.Close()
	once := &Surveyor{Name: "edges.example.test:443", Resolver: fixedResolver{ips: []netip.Addr{a.Addr()}}, Probe: probe,
		Interval: time.Millisecond, Rounds: 2, Alerts: &alert.Sender{URL: ok.URL, Attempts: 1}}
	once.Run(context.Background())
	if got := recv.List(); !slices.Equal(got, []string{a.String() + " " + EdgeBackendDead}) {
		t.Errorf("after Run with Rounds 2, alerts %v; want the backend-dead one its last round confirmed", got)
	}
}
