package mesh

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// fixture is an Evaluator on a fake clock with shorthands for feeding it.
type fixture struct {
	t   *testing.T
	clk *clock.Fake
	e   *Evaluator
}

func newFixture(t *testing.T, th Thresholds, servers ...string) *fixture {
	t.Helper()
	return newCheckersFixture(t, th, nil, servers...)
}

// newCheckersFixture is newFixture with checkers configured as the checker servers.
func newCheckersFixture(t *testing.T, th Thresholds, checkers []string, servers ...string) *fixture {
	t.Helper()
	clk := clock.NewFake(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	e, err := newEvaluator(th, clk, checkers, servers...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, clk: clk, e: e}
}

// report records s's report now.
func (f *fixture) report(s string, healthy bool) {
	f.t.Helper()
	if err := f.e.Report(Report{Server: s, Healthy: healthy}); err != nil {
		f.t.Fatal(err)
	}
}

// claimChecker records s's healthy report claiming the checker role, now.
func (f *fixture) claimChecker(s string) {
	f.t.Helper()
	if err := f.e.Report(Report{Server: s, Healthy: true, Checker: true}); err != nil {
		f.t.Fatal(err)
	}
}

// probe records n results of w probing target, now.
func (f *fixture) probe(w, target string, ok bool, n int) {
	f.t.Helper()
	for range n {
		p := Probe{Prober: w, Target: target, OK: ok}
		if !ok {
			p.Err = "connection refused"
		}
		if err := f.e.Probe(p); err != nil {
			f.t.Fatal(err)
		}
	}
}

// healthy makes every server report healthy and every pair see each other once.
func (f *fixture) healthy() {
	f.t.Helper()
	for _, s := range f.e.Servers() {
		f.report(s, true)
		for _, o := range f.e.Servers() {
			if o != s {
				f.probe(s, o, true, 1)
			}
		}
	}
}

func (f *fixture) verdict(s string) Verdict {
	f.t.Helper()
	for _, v := range f.e.Verdicts() {
		if v.Server == s {
			return v
		}
	}
	f.t.Fatalf("no verdict for %s", s)
	return Verdict{}
}

// expect checks a verdict's state and that its reason says every one of says.
func expect(t *testing.T, v Verdict, state State, says ...string) {
	t.Helper()
	if v.State != state {
		t.Errorf("%s: state %s, want %s; reason: %s", v.Server, v.State, state, v.Reason)
	}
	if v.InRotation != (state != Down) {
		t.Errorf("%s: in rotation %v with state %s", v.Server, v.InRotation, v.State)
	}
	for _, s := range says {
		if !strings.Contains(v.Reason, s) {
			t.Errorf("%s: reason does not say %q: %s", v.Server, s, v.Reason)
		}
	}
}

func withThresholds(change func(*Thresholds)) Thresholds {
	th := DefaultThresholds()
	if change != nil {
		change(&th)
	}
	return th
}

func fakeClock() *clock.Fake { return clock.NewFake(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)) }

// testKey is the mesh key of the tests' meshes.
var testKey = []byte("test-mesh-key-0123456789abcdef")

// bulletinPost is one POST /mesh/bulletin made by hand: a genuine one or a forgery.
type bulletinPost struct {
	key      []byte // nil: no signature
	sender   string // X-Zero502-Mesh-Sender
	receiver string // the receiver it is signed for ("": the node it is sent to)
	ts       int64  // X-Zero502-Mesh-Timestamp
	body     string
	signed   string // the body the signature covers ("": body)
}

// send posts b to n from the local address from, and returns the status and the answer.
func (b bulletinPost) send(t *testing.T, n *Node, from netip.Addr) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+n.Addr()+"/mesh/bulletin", strings.NewReader(b.body))
	if err != nil {
		t.Fatal(err)
	}
	receiver, signed := b.receiver, b.signed
	if receiver == "" {
		receiver = n.Name
	}
	if signed == "" {
		signed = b.body
	}
	signRequest(req, b.key, b.sender, receiver, b.ts, []byte(signed))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(msg))
}
