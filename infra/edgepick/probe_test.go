package edgepick

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProbeTakesConnectAndHandshakeFromOneSocket(t *testing.T) {
	pki := newPKI(t)
	addr := startTLSEdge(t, pki, 150*time.Millisecond)
	m := Probe(context.Background(), addr, pki.client(), 5*time.Second)
	if !m.Healthy() {
		t.Fatalf("probe of a working edge failed: %v", m.Err)
	}
	if m.Addr != addr || m.Connect <= 0 {
		t.Errorf("measurement %+v: want addr %s and a connect time", m, addr)
	}
	if m.Handshake < 150*time.Millisecond {
		t.Errorf("handshake %s, want at least the edge's 150ms delay", m.Handshake)
	}
	if m.Connect >= m.Handshake {
		t.Errorf("connect %s should be the short number (loopback), handshake %s the long one", m.Connect, m.Handshake)
	}
}

func TestSilentEdgeFailsTheHandshakeWithinItsBudgetThoughAConnectSucceeds(t *testing.T) {
	addr := startSilentEdge(t)
	// What failover and a plain TCP check see: the connect succeeds.
	c, err := net.DialTimeout("tcp", addr.String(), time.Second)
	if err != nil {
		t.Fatalf("a plain connect to the silent edge should succeed: %v", err)
	}
	_ = c.Close()

	budget := 300 * time.Millisecond
	start := time.Now()
	m := Probe(context.Background(), addr, newPKI(t).client(), budget)
	took := time.Since(start)
	if m.Healthy() {
		t.Fatal("the full-handshake probe called an edge that forwards nothing healthy")
	}
	if took > budget+2*time.Second {
		t.Errorf("probe took %s, want about its %s budget", took, budget)
	}
	if m.Connect <= 0 {
		t.Error("the connect succeeded, Connect should say how long it took")
	}
	for _, w := range []string{addr.String(), "budget", "forwards nothing"} {
		if !strings.Contains(m.Err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, m.Err)
		}
	}
	if v := m.Verdict(); !strings.Contains(v, "accepts TCP") {
		t.Errorf("verdict %q, want the accepts-but-forwards-nothing reading", v)
	}
}

func TestClosedPortIsRefusedFast(t *testing.T) {
	addr := closedPort(t)
	start := time.Now()
	m := Probe(context.Background(), addr, newPKI(t).client(), 5*time.Second)
	if m.Healthy() || m.Connect != 0 {
		t.Fatalf("closed port: %+v, want a connect failure", m)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a refused connect took %s; refusals should be fast, not cost the budget", took)
	}
	if v := m.Verdict(); !strings.Contains(v, "TCP connect fails") {
		t.Errorf("verdict %q", v)
	}
}

func TestProbeChecksTheOriginCertificate(t *testing.T) {
	addr := startTLSEdge(t, newPKI(t), 0)
	m := Probe(context.Background(), addr, newPKI(t).client(), 5*time.Second) // another CA
	if m.Healthy() {
		t.Fatal("a certificate from an unknown CA passed the probe")
	}
	if !strings.Contains(m.Err.Error(), "TLS handshake") {
		t.Errorf("error %v should name the handshake", m.Err)
	}
}

func TestMeasureRanksByHandshakeFailuresLast(t *testing.T) {
	pki := newPKI(t)
	slow := startTLSEdge(t, pki, 150*time.Millisecond)
	fast := startTLSEdge(t, pki, 0)
	silent := startSilentEdge(t)
	closed := closedPort(t)

	r := Measure(context.Background(), []netip.AddrPort{silent, slow, closed, fast}, TLSProbe(pki.client(), 2*time.Second))
	if len(r) != 4 {
		t.Fatalf("ranking has %d entries, want 4", len(r))
	}
	if r[0].Addr != fast || r[1].Addr != slow {
		t.Fatalf("ranking %v, want fast %s then slow %s", addrsOf(r), fast, slow)
	}
	for _, m := range r[2:] {
		if m.Healthy() {
			t.Errorf("%s ranked among the failures without an error", m.Addr)
		}
	}
	if r.Index(silent) < 2 {
		t.Errorf("the silent edge should be ranked last with the failures: %v", addrsOf(r))
	}
	if best, ok := r.Best(); !ok || best.Addr != fast {
		t.Errorf("Best = %v %v, want %s", best.Addr, ok, fast)
	}
}

func TestMeasureGivesEachProbeItsOwnBudgetInParallel(t *testing.T) {
	var silent []netip.AddrPort
	for range 4 {
		silent = append(silent, startSilentEdge(t))
	}
	budget := 400 * time.Millisecond
	probe := TLSProbe(newPKI(t).client(), budget)
	// Each probe waits, before it starts, until all four are in flight: in parallel they all get
	// there; in sequence the first waits for ever (bounded here), and no wall-clock threshold has
	// to hold on a loaded machine.
	var started sync.WaitGroup
	started.Add(len(silent))
	allStarted := make(chan struct{})
	go func() { started.Wait(); close(allStarted) }()
	giveUp, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inParallel := func(ctx context.Context, a netip.AddrPort) Measurement {
		started.Done()
		select {
		case <-allStarted:
		case <-giveUp.Done():
			return Measurement{Addr: a, Err: errors.New("the other probes never started: probes are not parallel")}
		}
		return probe(ctx, a)
	}
	r := Measure(context.Background(), silent, inParallel)
	if _, ok := r.Best(); ok {
		t.Fatal("silent edges ranked healthy")
	}
	for _, m := range r {
		// Each failed on its own budget, not on a shared deadline or a missing sibling.
		if m.Err == nil || !strings.Contains(m.Err.Error(), "budget") {
			t.Errorf("%s: %v, want a failure within its own %s budget", m.Addr, m.Err, budget)
		}
	}
}

func addrsOf(r Ranking) []netip.AddrPort {
	var out []netip.AddrPort
	for _, m := range r {
		out = append(out, m.Addr)
	}
	return out
}
