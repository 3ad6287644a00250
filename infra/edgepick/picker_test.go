package edgepick

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// lab is two working edges (fast and slow) behind real TLS, and a picker over them.
type lab struct {
	pki        testPKI
	fast, slow netip.AddrPort
	probes     *counted
	clk        *clock.Fake
	logs       *logs
}

func newLab(t *testing.T) *lab {
	pki := newPKI(t)
	l := &lab{
		pki:  pki,
		slow: startTLSEdge(t, pki, 150*time.Millisecond),
		fast: startTLSEdge(t, pki, 0),
		clk:  clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		logs: &logs{},
	}
	l.probes = &counted{probe: TLSProbe(pki.client(), 5*time.Second)}
	return l
}

func (l *lab) picker(state string, addrs ...netip.AddrPort) *Picker {
	return &Picker{Addrs: addrs, Probe: l.probes.Probe, StatePath: state, Clock: l.clk, Logger: l.logs.logger()}
}

func TestChooseMeasuresAndPicksTheFastestHandshake(t *testing.T) {
	l := newLab(t)
	c, ok := l.picker("", l.slow, l.fast).Choose(context.Background())
	if !ok {
		t.Fatalf("no choice: %s", c.NoChoice)
	}
	if c.Addr != l.fast || c.FromState {
		t.Errorf("chose %s (from state %v), want %s measured", c.Addr, c.FromState, l.fast)
	}
	if got := l.probes.n.Load(); got != 2 {
		t.Errorf("%d probes, want one per candidate (2)", got)
	}
}

func TestStateSurvivesARestartWithoutProbing(t *testing.T) {
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "edgepick.json")
	first, ok := l.picker(state, l.fast, l.slow).Choose(context.Background())
	if !ok {
		t.Fatalf("no choice: %s", first.NoChoice)
	}
	probed := l.probes.n.Load()

	l.clk.Advance(10 * time.Minute) // a restart, well within MaxAge
	again, ok := l.picker(state, l.slow, l.fast).Choose(context.Background())
	if !ok || again.Addr != first.Addr || !again.FromState {
		t.Fatalf("after a restart: %s from state %v ok %v, want %s from state", again.Addr, again.FromState, ok, first.Addr)
	}
	if got := l.probes.n.Load(); got != probed {
		t.Errorf("the restart probed %d times; a fresh state file should make it free", got-probed)
	}
	if len(again.Ranking) != 2 || again.Ranking[1].Addr != l.slow {
		t.Errorf("the whole ranking should come back: %v", addrsOf(again.Ranking))
	}
}

func TestFailoverSurvivesARestart(t *testing.T) {
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "edgepick.json")
	p := l.picker(state, l.fast, l.slow)
	c, ok := p.Choose(context.Background())
	if !ok || c.Addr != l.fast {
		t.Fatalf("first choice %s %v", c.Addr, ok)
	}
	c, ok = p.Failover(c, l.fast)
	if !ok || c.Addr != l.slow {
		t.Fatalf("failover from %s chose %s %v, want %s", l.fast, c.Addr, ok, l.slow)
	}
	probed := l.probes.n.Load()
	again, ok := l.picker(state, l.fast, l.slow).Choose(context.Background())
	if !ok || again.Addr != l.slow {
		t.Errorf("after a restart the agent went to %s, want %s: not back to the edge that just failed", again.Addr, l.slow)
	}
	if l.probes.n.Load() != probed {
		t.Error("the restart after a failover probed")
	}
}

func TestStateIsInvalidatedByTheSetNotByTheChoice(t *testing.T) {
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "edgepick.json")
	if _, ok := l.picker(state, l.fast, l.slow).Choose(context.Background()); !ok {
		t.Fatal("no first choice")
	}
	probed := l.probes.n.Load()
	third := startTLSEdge(t, l.pki, 150*time.Millisecond)
	c, ok := l.picker(state, l.fast, l.slow, third).Choose(context.Background())
	if !ok || c.FromState {
		t.Fatalf("an edge was added, the choice (%s, still in the set) came from state %v", c.Addr, c.FromState)
	}
	if got := l.probes.n.Load() - probed; got != 3 {
		t.Errorf("%d probes after the set changed, want every candidate (3)", got)
	}
	if !strings.Contains(l.logs.String(), "set changed") {
		t.Errorf("no log line says the set changed:\n%s", l.logs)
	}
	st, err := LoadState(state)
	if err != nil || len(st.Set) != 3 {
		t.Errorf("state not rewritten for the new set: %v %v", st.Set, err)
	}
}

func TestStateOlderThanMaxAgeIsMeasuredAgain(t *testing.T) {
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "edgepick.json")
	l.picker(state, l.fast, l.slow).Choose(context.Background())
	probed := l.probes.n.Load()
	l.clk.Advance(DefaultMaxAge + time.Second)
	if c, _ := l.picker(state, l.fast, l.slow).Choose(context.Background()); c.FromState {
		t.Error("a state older than MaxAge was used")
	}
	if l.probes.n.Load() == probed {
		t.Error("no probe after the state went stale")
	}
}

// A measurement stamped after now (the clock went back) has a negative age: it is stale beyond
// FutureAllowance, or it would stay fresh for as long as the clock went back plus MaxAge.
func TestStateMeasuredInTheFutureIsStale(t *testing.T) {
	a, b := ap("192.0.2.1:443"), ap("192.0.2.2:443")
	set := setOf([]netip.AddrPort{a, b})
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ahead time.Duration
		want  string // "": fresh
	}{
		{0, ""},
		{FutureAllowance, ""},
		{FutureAllowance + time.Second, "in the future"},
		{365 * 24 * time.Hour, "the clock went back"},
	} {
		st := State{Set: set, MeasuredAt: now.Add(tc.ahead)}
		why := st.Stale(set, now, DefaultMaxAge)
		if (why == "") != (tc.want == "") || !strings.Contains(why, tc.want) {
			t.Errorf("measured %s after now: stale %q, want %q", tc.ahead, why, tc.want)
		}
		if why := st.Stale(set, now, 0); (why == "") != (tc.want == "") {
			t.Errorf("measured %s after now, no age limit: stale %q, want %q", tc.ahead, why, tc.want)
		}
	}
}

func TestStateMeasuredInTheFutureIsMeasuredAgain(t *testing.T) {
	l := newLab(t)
	state := filepath.Join(t.TempDir(), "edgepick.json")
	l.picker(state, l.fast, l.slow).Choose(context.Background())
	probed := l.probes.n.Load()
	l.clk = clock.NewFake(l.clk.Now().Add(-24 * time.Hour)) // the clock stepped back a day
	if c, _ := l.picker(state, l.fast, l.slow).Choose(context.Background()); c.FromState {
		t.Error("a state measured a day in the future was used")
	}
	if l.probes.n.Load() == probed {
		t.Error("no probe after the clock went back")
	}
	if !strings.Contains(l.logs.String(), "in the future") {
		t.Errorf("no log line says the measurement is in the future:\n%s", l.logs)
	}
}

func TestCorruptStateIsLoggedAndMeasuredAgain(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"not json", "{half a file"},
		{"chosen outside the set", `{"set":["127.0.0.1:1","127.0.0.1:2"],"ranking":[{"addr":"127.0.0.1:1","handshake":"1ms"},` +
			`{"addr":"127.0.0.1:2","handshake":"2ms"}],"chosen":"127.0.0.1:3","measured_at":"2025-01-01T00:00:00Z"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			state := filepath.Join(t.TempDir(), "edgepick.json")
			if err := os.WriteFile(state, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadState(state); err == nil || !strings.Contains(err.Error(), "corrupt") {
				t.Fatalf("LoadState of a corrupt file: %v, want an error saying corrupt", err)
			}
			c, ok := l.picker(state, l.fast, l.slow).Choose(context.Background())
			if !ok || c.FromState || c.Addr != l.fast {
				t.Fatalf("corrupt state: choice %s ok %v from state %v, want a fresh measurement choosing %s", c.Addr, ok, c.FromState, l.fast)
			}
			if l.probes.n.Load() != 2 {
				t.Errorf("%d probes, want a re-measure (2)", l.probes.n.Load())
			}
			if !strings.Contains(l.logs.String(), "corrupt") {
				t.Errorf("no log line says the state is corrupt:\n%s", l.logs)
			}
			if _, err := LoadState(state); err != nil {
				t.Errorf("the state file was not rewritten: %v", err)
			}
		})
	}
}

// A state file another user could have written is not believed (it picks the edge the agent
// connects to), nor one far too large to be a state: the picker measures again.
func TestUntrustedOrOversizedStateIsMeasuredAgain(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		spoil      func(t *testing.T, path string)
	}{
		{"writable by others", "mode 0666", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"over the size bound", "over 1048576 bytes", func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data = bytes.TrimSuffix(bytes.TrimSpace(data), []byte("}")) // a valid state, padded past the bound
			big := append(data, []byte(`,"pad":"`+strings.Repeat("x", maxState)+`"}`)...)
			if err := os.WriteFile(path, big, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			state := filepath.Join(t.TempDir(), "edgepick.json")
			if _, ok := l.picker(state, l.fast, l.slow).Choose(context.Background()); !ok {
				t.Fatal("no first choice")
			}
			if _, err := LoadState(state); err != nil {
				t.Fatalf("the state just written: %v", err)
			}
			tc.spoil(t, state)
			if _, err := LoadState(state); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadState: %v, want an error saying %q", err, tc.want)
			}
			probed := l.probes.n.Load()
			if c, ok := l.picker(state, l.fast, l.slow).Choose(context.Background()); !ok || c.FromState {
				t.Fatalf("choice %s ok %v from state %v, want a fresh measurement", c.Addr, ok, c.FromState)
			}
			if l.probes.n.Load() == probed {
				t.Error("no probe: the spoilt state was used")
			}
		})
	}
}

func TestUnwritableStateStillChooses(t *testing.T) {
	l := newLab(t)
	// A regular file where the state's directory should be: no one (not even root) can write under it.
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c, ok := l.picker(filepath.Join(blocker, "edgepick.json"), l.fast, l.slow).Choose(context.Background())
	if !ok || c.Addr != l.fast {
		t.Fatalf("unwritable state: %s ok %v (%s), want the measured choice %s", c.Addr, ok, c.NoChoice, l.fast)
	}
	if !strings.Contains(l.logs.String(), "state not written") {
		t.Errorf("no log line says the state was not written:\n%s", l.logs)
	}
}

func TestFewerThanTwoCandidatesIsSkippedWithoutProbing(t *testing.T) {
	l := newLab(t)
	for _, addrs := range [][]netip.AddrPort{{l.fast}, {l.fast, l.fast}} {
		c, ok := l.picker("", addrs...).Choose(context.Background())
		if ok || !c.Skipped {
			t.Errorf("%v: ok %v skipped %v, want skipped", addrs, ok, c.Skipped)
		}
	}
	p := &Picker{Name: "edge.example.test:443", Resolver: fixedResolver{ips: []netip.Addr{netip.MustParseAddr("127.0.0.1")}},
		Probe: l.probes.Probe, Logger: l.logs.logger()}
	if _, ok := p.Choose(context.Background()); ok {
		t.Error("a name with one A record: want skipped")
	}
	if n := l.probes.n.Load(); n != 0 {
		t.Errorf("%d probes with fewer than two candidates, want 0", n)
	}
}

func TestNoChoiceWhenDNSRefusesOrNobodyAnswers(t *testing.T) {
	l := newLab(t)
	refused := &Picker{Name: "edge.example.test:443", Resolver: fixedResolver{err: errors.New("server misbehaving")},
		Probe: l.probes.Probe, Logger: l.logs.logger()}
	if c, ok := refused.Choose(context.Background()); ok || !strings.Contains(c.NoChoice, "server misbehaving") {
		t.Errorf("DNS refused: ok %v, why %q", ok, c.NoChoice)
	}
	dead := l.picker("", closedPort(t), closedPort(t))
	if c, ok := dead.Choose(context.Background()); ok || !strings.Contains(c.NoChoice, "no edge") {
		t.Errorf("nobody answers: ok %v, why %q", ok, c.NoChoice)
	}
	if !strings.Contains(l.logs.String(), "no choice") {
		t.Errorf("no log line for no choice:\n%s", l.logs)
	}
}

func TestResolveUsesTheASetWithTheNamesPort(t *testing.T) {
	r := fixedResolver{ips: []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("::ffff:192.0.2.1"), netip.MustParseAddr("192.0.2.2")}}
	set, err := Resolve(context.Background(), r, "edge.example.test:8443")
	if err != nil {
		t.Fatal(err)
	}
	want := Set{ap("192.0.2.1:8443"), ap("192.0.2.2:8443")}
	if !set.Equal(want) {
		t.Errorf("set %v, want %v (sorted, unique, unmapped)", set, want)
	}
	for _, bad := range []string{"edge.example.test", "edge.example.test:0", "edge.example.test:https"} {
		if _, err := Resolve(context.Background(), r, bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Resolve(%q): %v, want an error naming it", bad, err)
		}
	}
}

func TestSurveyReportsHealthByHandshake(t *testing.T) {
	pki := newPKI(t)
	good := startTLSEdge(t, pki, 0)
	// The resolver gives 127.0.0.1; the name's port picks the edge.
	r := fixedResolver{ips: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
	got, err := Survey(context.Background(), r, good.String(), TLSProbe(pki.client(), 5*time.Second))
	if err != nil || len(got) != 1 || got[0].Verdict() != "healthy" {
		t.Fatalf("survey of a working edge: %v %v", got, err)
	}
	silent := startSilentEdge(t)
	got, err = Survey(context.Background(), r, "edge.example.test:"+silentPort(silent), TLSProbe(pki.client(), 300*time.Millisecond))
	if err != nil || len(got) != 1 || got[0].Healthy() {
		t.Fatalf("survey of a silent edge: %v %v, want it down", got, err)
	}
}

func silentPort(a netip.AddrPort) string { return strings.TrimPrefix(a.String(), "127.0.0.1:") }
