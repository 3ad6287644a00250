package standing

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// A configured target whose first check failed (a slow start, a busy host) enters rotation at
// its first good check, not after healthy_threshold of them; once in rotation, the thresholds
// apply as always.
func TestAConfiguredTargetThatFailedItsFirstCheckEntersAtItsFirstGoodOne(t *testing.T) {
	now := time.Unix(1e9, 0)
	var b Standing
	b.StartAwaitingFirstCheck(now)
	if b.InRotation() || b.State() != Unhealthy {
		t.Fatalf("before its first check: %s, in rotation %v; want unhealthy, out", b.State(), b.InRotation())
	}
	th := Thresholds{Unhealthy: 2, Healthy: 3}
	refused := Verdict{Err: errors.New("connect: connection refused")}
	steps := []struct {
		v    Verdict
		want State
	}{
		{refused, Unhealthy},            // the first check: out
		{refused, Unhealthy},            // still out
		{Verdict{Status: 200}, Healthy}, // its first good check puts it in
		{refused, Healthy},              // in rotation now: unhealthy_threshold counts
		{refused, Unhealthy},
		{Verdict{Status: 200}, Unhealthy}, // and healthy_threshold to come back
		{Verdict{Status: 200}, Unhealthy},
		{Verdict{Status: 200}, Healthy},
	}
	for i, st := range steps {
		now = now.Add(time.Second)
		b.Record(st.v, now, th)
		if got := b.State(); got != st.want {
			t.Fatalf("step %d (%+v): %s, want %s", i, st.v, got, st.want)
		}
	}
}

// A configured target's first 503 makes it draining at once: it asked to leave.
func TestAConfiguredTargetWhoseFirstCheckIs503StartsDraining(t *testing.T) {
	var b Standing
	now := time.Unix(1e9, 0)
	b.StartAwaitingFirstCheck(now)
	if tr, ok := b.Record(Verdict{Status: 503}, now.Add(time.Second), Thresholds{Unhealthy: 2, Healthy: 2}); !ok || tr.To != Draining {
		t.Fatalf("first check 503: %+v %v, want a transition to draining", tr, ok)
	}
	if tr, ok := b.Record(Verdict{Status: 200}, now.Add(2*time.Second), Thresholds{Unhealthy: 2, Healthy: 2}); !ok || tr.To != Healthy {
		t.Fatalf("then a 200: %+v %v, want in rotation at its first good check", tr, ok)
	}
}

// An undrain makes a configured target earn the healthy threshold from then on, even one that
// had not been in rotation yet (the idle start-first port the deployer held out, an edge
// upstream drained before its first check): its first good check no longer puts it in at once.
func TestUndrainOfATargetNeverInRotationNeedsTheHealthyThreshold(t *testing.T) {
	th := Thresholds{Unhealthy: 2, Healthy: 3}
	ok := Verdict{Status: 200}
	refused := Verdict{Err: errors.New("connect: connection refused")}
	for _, tc := range []struct {
		name  string
		setup func(s *Standing, now time.Time)
	}{
		{"first check failed, then drained", func(s *Standing, now time.Time) {
			s.Record(refused, now, th)
			s.AdminDrain(now, "admin")
		}},
		{"drained before its first check", func(s *Standing, now time.Time) {
			s.AdminDrain(now, "admin")
			s.Record(ok, now, th) // held: only recorded
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Standing{}
			now := zeroTime
			s.StartAwaitingFirstCheck(now)
			tc.setup(s, now)
			now = now.Add(time.Second)
			if tr, moved := s.Undrain(now); !moved || tr.To != Joining {
				t.Fatalf("undrain: %+v %v", tr, moved)
			}
			for i := 1; i <= th.Healthy; i++ {
				now = now.Add(time.Second)
				s.Record(ok, now, th)
				if in := s.InRotation(); in != (i == th.Healthy) {
					t.Fatalf("after %d good checks since the undrain: in rotation %v (state %s), want in only at the healthy threshold %d",
						i, in, s.State(), th.Healthy)
				}
			}
		})
	}
}

// Only a target that was in rotation and left it for failing is an outage (what was in flight
// there may be lost); a draining target that then fails its checks had asked to leave and
// finishes what it has.
func TestOnlyLeavingRotationForFailingIsAnOutage(t *testing.T) {
	th := Thresholds{Unhealthy: 3, Healthy: 2}
	refused := Verdict{Err: errors.New("connect: connection refused")}

	s := inRotation()
	now := zeroTime
	var outages []Transition
	record := func(v Verdict) {
		now = now.Add(time.Second)
		if tr, moved := s.Record(v, now, th); moved && Outage(tr) {
			outages = append(outages, tr)
		}
	}
	record(Verdict{Status: 503})
	for range th.Unhealthy {
		record(refused)
	}
	if s.State() != Unhealthy || len(outages) != 0 {
		t.Fatalf("a draining target that then fails its checks: state %s, outages %+v; want unhealthy and no outage", s.State(), outages)
	}

	s = inRotation()
	for range th.Unhealthy {
		record(refused)
	}
	if len(outages) != 1 || outages[0].From != Healthy {
		t.Fatalf("a target in rotation that fails its checks: outages %+v, want one", outages)
	}
	s = inRotation()
	if tr, moved := s.Eject("connection refused", now); !moved || !Outage(tr) {
		t.Fatalf("a passive ejection from rotation: %+v %v, want an outage", tr, moved)
	}

	s = &Standing{}
	s.StartAwaitingFirstCheck(now)
	if tr, moved := s.Record(refused, now, th); moved && Outage(tr) {
		t.Fatalf("a first check's failure: %+v, want no outage (it was never in)", tr)
	}

	// A draining target whose checks then get no answer at all is an outage: its host is lost
	// or frozen, and what it had will never come back. The verdicts come from real probes: a
	// listener that accepts and never answers, and a closed port.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	silent := HTTPProbe(context.Background(), mute.Addr().String(), "/health", "test", 50*time.Millisecond, nil)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	_ = closed.Close()
	refusedProbe := HTTPProbe(context.Background(), closed.Addr().String(), "/health", "test", time.Second, nil)
	if !silent.silent() || refusedProbe.silent() {
		t.Fatalf("no answer %+v silent %v, refused %+v silent %v; want true, false", silent, silent.silent(), refusedProbe, refusedProbe.silent())
	}
	for _, tc := range []struct {
		name   string
		after  []Verdict // after its first 503
		state  State
		outage bool
	}{
		{"no answer, as many times as the unhealthy threshold", []Verdict{silent, silent, silent}, Unhealthy, true},
		{"no answer, fewer times: it may be a slow check", []Verdict{silent, silent}, Draining, false},
		{"one slow 503 among its 503s", []Verdict{{Status: 503}, {Status: 503}, silent, {Status: 503}}, Draining, false},
		{"refused", []Verdict{refusedProbe, refusedProbe}, Unhealthy, false},
		{"no answer, then refused", []Verdict{silent, silent, refusedProbe}, Unhealthy, false},
		{"no answer, then a bad status", []Verdict{silent, {Status: 500}}, Unhealthy, false},
		{"refused once, a 503, then no answer", []Verdict{refusedProbe, {Status: 503}, silent, silent, silent}, Unhealthy, true},
	} {
		outages = nil
		s = inRotation()
		record(Verdict{Status: 503})
		for _, v := range tc.after {
			record(v)
		}
		if s.State() != tc.state || (len(outages) == 1) != tc.outage || tc.outage && !outages[0].NoAnswer {
			t.Errorf("a draining target, then %s: state %s, outages %+v; want %s, an outage %v (no_answer)", tc.name, s.State(), outages, tc.state, tc.outage)
		}
	}
}
