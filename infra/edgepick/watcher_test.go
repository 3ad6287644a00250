package edgepick

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

func TestShouldSwitchNeedsTheStreakAndBothThresholds(t *testing.T) {
	for _, tc := range []struct {
		name               string
		current, candidate time.Duration
		currentOK          bool
		streak             int
		want               bool
	}{
		{"absolute met, relative not: 100 → 79 ms", ms(100), ms(79), true, 2, false},
		{"both met: 100 → 70 ms", ms(100), ms(70), true, 2, true},
		{"relative met, absolute not: 4 → 3 ms", ms(4), ms(3), true, 2, false},
		{"same data centre: 1.2 → 0.6 ms", ms(1.2), ms(0.6), true, 9, false},
		{"both exactly at the thresholds: 80 → 60 ms", ms(80), ms(60), true, 2, true},
		{"absolute one below: 80 → 61 ms", ms(80), ms(61), true, 2, false},
		{"relative just below: 100 → 76 ms", ms(100), ms(76), true, 2, false},
		{"relative exactly: 100 → 75 ms", ms(100), ms(75), true, 2, true},
		{"streak of one: an edge that just restarted", ms(100), ms(10), true, 1, false},
		{"streak of two", ms(100), ms(10), true, 2, true},
		{"slower candidate", ms(50), ms(100), true, 5, false},
		{"current failed its probe: any healthy edge, with its streak", 0, ms(100), false, 2, true},
		{"current failed its probe, streak of one", 0, ms(100), false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := defaultHysteresis().shouldSwitch(tc.current, tc.currentOK, tc.candidate, tc.streak); got != tc.want {
				t.Errorf("shouldSwitch(%s → %s, streak %d) = %v, want %v", tc.current, tc.candidate, tc.streak, got, tc.want)
			}
		})
	}
}

func TestJitterIsFullWithinTheInterval(t *testing.T) {
	w := &Watcher{Rand: rand.New(rand.NewPCG(1, 2))}
	lo, hi := DefaultInterval, time.Duration(0)
	for range 10000 {
		d := w.wait()
		if d < 0 || d > DefaultInterval {
			t.Fatalf("wait %s outside [0, %s]", d, DefaultInterval)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo > 30*time.Second || hi < DefaultInterval-30*time.Second {
		t.Errorf("waits spread over [%s, %s]; full jitter should cover [0, %s]", lo, hi, DefaultInterval)
	}
	if got := (&Watcher{Rand: fixedRand(int64(DefaultInterval))}).wait(); got != DefaultInterval {
		t.Errorf("the top draw waits %s, want %s (the interval is inclusive)", got, DefaultInterval)
	}
}

func TestSwitchReasonIsAPlannedEndNotAnError(t *testing.T) {
	var r any = SwitchReason{Kind: Failback, From: ap("192.0.2.2:443"), To: ap("192.0.2.1:443")}
	if _, isErr := r.(error); isErr {
		t.Fatal("SwitchReason implements error: it would feed the reconnect backoff")
	}
}

// fixedRand always draws v (capped to the range).
type fixedRand int64

func (f fixedRand) Int64N(n int64) int64 { return min(int64(f), n-1) }

// script is a fake probe: each edge answers its list of results in turn, the last one repeating.
type script struct {
	mu    sync.Mutex
	plan  map[netip.AddrPort][]Measurement
	calls map[netip.AddrPort]int
}

func newScript() *script {
	return &script{plan: map[netip.AddrPort][]Measurement{}, calls: map[netip.AddrPort]int{}}
}

// set scripts a's answers: a duration is a healthy handshake, 0 a failed probe.
func (s *script) set(a netip.AddrPort, handshakes ...time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plan[a] = nil
	for _, h := range handshakes {
		m := Measurement{Addr: a, Connect: time.Millisecond, Handshake: h}
		if h == 0 {
			m = Measurement{Addr: a, Err: errors.New("connection refused")}
		}
		s.plan[a] = append(s.plan[a], m)
	}
}

func (s *script) probe(_ context.Context, a netip.AddrPort) Measurement {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.plan[a]
	i := min(s.calls[a], len(p)-1)
	s.calls[a]++
	return p[i]
}

func (s *script) called(a netip.AddrPort) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[a]
}

// watchLab runs a Watcher over edges a (ranked first) and b with a fake clock; each round's
// wait is the whole interval (fixedRand), so Advance(interval) is exactly one round.
type watchLab struct {
	a, b     netip.AddrPort
	probes   *script
	clk      *clock.Fake
	picker   *Picker
	watcher  *Watcher
	switched chan SwitchReason
	done     chan struct{}
	cancel   context.CancelFunc
}

func newWatchLab(t *testing.T, state string) *watchLab {
	l := &watchLab{
		a: ap("192.0.2.1:443"), b: ap("192.0.2.2:443"),
		probes:   newScript(),
		clk:      clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		switched: make(chan SwitchReason, 1),
		done:     make(chan struct{}),
	}
	l.picker = &Picker{Addrs: []netip.AddrPort{l.a, l.b}, Probe: l.probes.probe, StatePath: state, Clock: l.clk, Logger: (&logs{}).logger()}
	l.watcher = &Watcher{Picker: l.picker, Rand: fixedRand(int64(DefaultInterval))}
	return l
}

// run starts the watcher on current with ranking a (ah) then b (bh).
func (l *watchLab) run(t *testing.T, current netip.AddrPort, ah, bh time.Duration) {
	r := Ranking{{Addr: l.a, Handshake: ah}, {Addr: l.b, Handshake: bh}}
	r.sort()
	c := Choice{Addr: current, Set: setOf([]netip.AddrPort{l.a, l.b}), Ranking: r, MeasuredAt: l.clk.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		l.watcher.Run(ctx, c, func(r SwitchReason) { l.switched <- r })
	}()
	t.Cleanup(func() { cancel(); <-l.done })
}

// round lets exactly one round happen and reports the switch it decided, if any.
func (l *watchLab) round(t *testing.T) (SwitchReason, bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the watcher to wait for its next round", func() bool { return l.clk.Waiters() == 1 })
	l.clk.Advance(DefaultInterval)
	var r SwitchReason
	var switched bool
	poll.Until(t, 10*time.Second, "the round to finish", func() bool {
		select {
		case r = <-l.switched:
			switched = true
			return true
		case <-l.done:
			select { // Run calls onSwitch before it returns
			case r = <-l.switched:
				switched = true
			default:
			}
			return true
		default:
			return l.clk.Waiters() == 1
		}
	})
	return r, switched
}

func TestFailbackNeedsAStreakOfTwo(t *testing.T) {
	state := filepath.Join(t.TempDir(), "edgepick.json")
	l := newWatchLab(t, state)
	// The agent failed over from a (30ms) to b (100ms); a fails, restarts, then answers twice.
	l.probes.set(l.a, 0, ms(30), ms(30))
	l.probes.set(l.b, ms(100))
	l.run(t, l.b, ms(30), ms(100))

	for i, want := range []bool{false, false, true} {
		r, switched := l.round(t)
		if switched != want {
			t.Fatalf("round %d: switched %v, want %v", i+1, switched, want)
		}
		if switched && (r.Kind != Failback || r.From != l.b || r.To != l.a || r.Streak != 2) {
			t.Errorf("reason %+v, want failback %s → %s with a streak of 2", r, l.b, l.a)
		}
	}
	if n := l.probes.called(l.b); n != 0 {
		t.Errorf("the current edge was probed %d times; failback probes only the edges ranked above it", n)
	}
	st, err := LoadState(state)
	if err != nil || st.Chosen != l.a {
		t.Errorf("state after the switch: chosen %s (%v), want %s so a restart lands there too", st.Chosen, err, l.a)
	}
}

func TestAFailedProbeResetsTheStreak(t *testing.T) {
	l := newWatchLab(t, "")
	l.probes.set(l.a, ms(30), 0, ms(30), ms(30))
	l.run(t, l.b, ms(30), ms(100))
	for i, want := range []bool{false, false, false, true} {
		if _, switched := l.round(t); switched != want {
			t.Fatalf("round %d: switched %v, want %v", i+1, switched, want)
		}
	}
}

func TestOnTheBestEdgeNothingIsProbed(t *testing.T) {
	l := newWatchLab(t, "")
	l.probes.set(l.a, ms(30))
	l.probes.set(l.b, ms(100))
	l.run(t, l.a, ms(30), ms(100))
	for range 3 {
		if _, switched := l.round(t); switched {
			t.Fatal("switched away from the best edge")
		}
	}
	if l.probes.called(l.a)+l.probes.called(l.b) != 0 {
		t.Error("probes ran while the session was on the top-ranked edge and the measurement fresh")
	}
}

// A session whose measurement is stamped a day ahead (the clock went back) re-measures on its
// first round instead of trusting it for a day plus MaxAge.
func TestMeasurementFromTheFutureMakesTheWatcherMeasureEverything(t *testing.T) {
	l := newWatchLab(t, "")
	l.probes.set(l.a, ms(30))
	l.probes.set(l.b, ms(100))
	r := Ranking{{Addr: l.a, Handshake: ms(30)}, {Addr: l.b, Handshake: ms(100)}}
	c := Choice{Addr: l.a, Set: setOf([]netip.AddrPort{l.a, l.b}), Ranking: r, MeasuredAt: l.clk.Now().Add(24 * time.Hour)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(l.done)
		l.watcher.Run(ctx, c, func(r SwitchReason) { l.switched <- r })
	}()
	t.Cleanup(func() { cancel(); <-l.done })
	if _, switched := l.round(t); switched {
		t.Fatal("switched away from the best edge")
	}
	if l.probes.called(l.a) != 1 || l.probes.called(l.b) != 1 {
		t.Errorf("probes %d of a, %d of b in the first round; want every edge measured once (the measurement is a day in the future)",
			l.probes.called(l.a), l.probes.called(l.b))
	}
}

func TestRemeasureSwitchesOnlyPastBothThresholds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		b        time.Duration
		switchAt int // round, 0: never
		wantFrom time.Duration
		wantKind switchKind
	}{
		{"100 → 79 ms stays", ms(79), 0, 0, ""},
		{"100 → 70 ms switches once b has its streak", ms(70), 2, ms(100), Remeasured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newWatchLab(t, "")
			l.picker.MaxAge = time.Minute // every round re-measures
			l.probes.set(l.a, ms(100))
			l.probes.set(l.b, tc.b)
			l.run(t, l.a, ms(100), ms(120)) // a was the better one when measured
			for i := 1; i <= 4; i++ {
				r, switched := l.round(t)
				if switched != (i == tc.switchAt) {
					t.Fatalf("round %d: switched %v (%v), want a switch at round %d", i, switched, r, tc.switchAt)
				}
				if switched {
					if r.To != l.b || r.FromHandshake != tc.wantFrom || r.Kind != tc.wantKind {
						t.Errorf("reason %v", r)
					}
					return // the session ends: Run is over
				}
			}
		})
	}
}

func TestRemeasureThatFindsTheGainWithAStreakSwitches(t *testing.T) {
	l := newWatchLab(t, "")
	l.picker.MaxAge = time.Minute // every round re-measures
	l.probes.set(l.a, ms(100))
	l.probes.set(l.b, ms(95), ms(95), ms(60))
	l.run(t, l.a, ms(100), ms(95)) // b ranked above a, within the thresholds: the agent stays on a
	// Round 1: b 95ms, streak 1. Round 2: b 95ms, streak 2, but 5ms is no gain. Round 3: b 60ms,
	// but its last two probes were 95 and 60ms: the gain must hold on both. Round 4: b 60ms
	// twice, 40ms and 40 %: switch, decided by the re-measure.
	for i, want := range []bool{false, false, false, true} {
		r, switched := l.round(t)
		if switched != want {
			t.Fatalf("round %d: switched %v, want %v", i+1, switched, want)
		}
		if switched && r.Kind != Remeasured {
			t.Errorf("kind %s, want %s", r.Kind, Remeasured)
		}
	}
}

// One slow probe of the current edge is jitter (a loaded machine, a queue on the path), not a
// better candidate: the current edge counts with its best of its last three, so the agent
// leaves only once it is slow on all three.
func TestOneSlowProbeOfTheCurrentEdgeIsNoReasonToSwitch(t *testing.T) {
	l := newWatchLab(t, "")
	l.picker.MaxAge = time.Minute // every round re-measures
	l.probes.set(l.a, ms(60), ms(60), ms(98))
	l.probes.set(l.b, ms(69))
	l.run(t, l.a, ms(60), ms(69))
	// Rounds 1-2: a 60ms, ranked first. Round 3: a 98ms, b 69ms (a gain of 29ms and 30 % over
	// that one probe), but a's best of its last three is 60ms. Round 4: still 60ms among them.
	// Round 5: a was 98ms three times in a row: its path is slower now.
	for i, want := range []bool{false, false, false, false, true} {
		r, switched := l.round(t)
		if switched != want {
			t.Fatalf("round %d: switched %v (%s), want %v", i+1, switched, r, want)
		}
		if switched && (r.To != l.b || r.FromHandshake != ms(98) || r.ToHandshake != ms(69)) {
			t.Errorf("switch %s; want a (98ms) → b (69ms)", r)
		}
	}
}

func TestTheRoundWaitsItsJitteredDelay(t *testing.T) {
	l := newWatchLab(t, "")
	l.watcher.Rand = fixedRand(int64(90 * time.Second))
	l.probes.set(l.a, ms(30))
	l.run(t, l.b, ms(30), ms(100))
	poll.Until(t, 10*time.Second, "the watcher to wait", func() bool { return l.clk.Waiters() == 1 })
	l.clk.Advance(90*time.Second - time.Nanosecond)
	if l.clk.Waiters() != 1 || l.probes.called(l.a) != 0 {
		t.Fatal("the round ran before its 90s wait")
	}
	l.clk.Advance(time.Nanosecond)
	poll.Until(t, 10*time.Second, "the round after 90s", func() bool { return l.probes.called(l.a) == 1 })
}

func TestWatcherStopsWithTheSession(t *testing.T) {
	l := newWatchLab(t, "")
	l.run(t, l.b, ms(30), ms(100))
	poll.Until(t, 10*time.Second, "the watcher to wait", func() bool { return l.clk.Waiters() == 1 })
	l.cancel()
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestWatcherWithoutAProbeDoesNotWatch(t *testing.T) {
	// A choice read from the state file was made without probing; the watcher must not crash on it.
	l := newWatchLab(t, "")
	l.picker.Probe = nil
	l.run(t, l.b, ms(30), ms(100))
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run kept watching with no probe to watch with")
	}
	if n := l.clk.Waiters(); n != 0 {
		t.Errorf("%d rounds scheduled with no probe", n)
	}
}

// changingResolver is an A set an operator edits while the session runs.
type changingResolver struct {
	mu  sync.Mutex
	ips []netip.Addr
}

func (r *changingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]netip.Addr(nil), r.ips...), nil
}

func (r *changingResolver) add(ip string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ips = append(r.ips, netip.MustParseAddr(ip))
}

func TestAnEdgeAddedToTheSetMakesTheWatcherMeasureEverything(t *testing.T) {
	l := newWatchLab(t, "")
	res := &changingResolver{ips: []netip.Addr{l.a.Addr(), l.b.Addr()}}
	l.picker.Addrs, l.picker.Name, l.picker.Resolver = nil, "edge.example.test:443", res
	c := ap("192.0.2.3:443")
	l.probes.set(l.a, ms(30))
	l.probes.set(l.b, ms(100))
	l.probes.set(c, ms(120))
	l.run(t, l.a, ms(30), ms(100)) // on the best edge: nothing to probe while the set holds

	if _, switched := l.round(t); switched || l.probes.called(l.a)+l.probes.called(l.b) != 0 {
		t.Fatalf("round 1 with the same set: switched %v, probes a %d b %d, want nothing", switched,
			l.probes.called(l.a), l.probes.called(l.b))
	}
	res.add("192.0.2.3") // the chosen edge a is still in the set, yet the measurement is stale
	if _, switched := l.round(t); switched {
		t.Fatal("switched away from the still fastest edge")
	}
	for _, e := range []netip.AddrPort{l.a, l.b, c} {
		if n := l.probes.called(e); n != 1 {
			t.Errorf("%s probed %d times after the set changed, want every edge once", e, n)
		}
	}
}
