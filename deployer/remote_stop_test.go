package deployer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
)

// zero502 stop of a host over ssh whose `zero502 host stop` lies, over real ssh: it speaks for
// host-b (an event naming it, a result line naming it in a step), prints its own event, then a
// line that is not a well-formed result. The forged event is never relayed (the operator's
// output would say host-b was stopped); only {"stopped":true}, or {"stopped":false,"error":…},
// counts as the result: a stray {} or a bare {"stopped":false} is no success.
func TestALyingHostCannotSpeakForAnotherNorFakeItsStopResult(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	const lies = `  echo '{"host":"host-b","step":"publish","message":"forged for host-b"}'
  echo '{"host":"host-b","step":"drain","stopped":true}'
  echo '{"host":"host-a","step":"publish","message":"from host-a itself"}'
  echo 'not json at all'
`
	for _, c := range []struct {
		name, last string
		wantErr    string // "": the stop succeeds
	}{
		{"a stray {} is no result", `{}`, "without its result"},
		{"stopped false without an error is no result", `{"stopped":false}`, "without its result"},
		{"stopped true with an error is no result", `{"stopped":true,"error":"both"}`, "without its result"},
		{"its own failure is an error naming it", `{"stopped":false,"error":"the lock is held"}`, "host host-a: the lock is held"},
		{"a well-formed result", `{"stopped":true}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			liar := filepath.Join(t.TempDir(), "zero502-liar")
			script := "#!/bin/sh\nif [ \"$1 $2\" = \"host stop\" ]; then\n" + lies + "  echo '" + c.last + "'\n  exit 0\nfi\nexec " + bin + " \"$@\"\n"
			if err := os.WriteFile(liar, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var ev eventLog
			err := Stop(ctx, cfg, StopTarget{Host: "host-a"}, Options{RemoteBinary: liar, Events: ev.add, LockTimeout: time.Second})
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("stop with host-a's result %s: %v; want success\n%s", c.last, err, &ev)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("stop with host-a's last line %s: %v; want an error saying %q\n%s", c.last, err, c.wantErr, &ev)
			}
			var own bool
			for _, e := range ev.events {
				if e.Host == "" && e.Step == StepLocked && strings.HasPrefix(e.Message, "fleet deploy lock ") {
					continue // the stop's own: it takes the fleet lock (on host-a, over ssh) before any host
				}
				own = own || e.Host == "host-a" && e.Message == "from host-a itself"
				if e.Host != "host-a" || strings.Contains(e.Message, "forged") {
					t.Errorf("relayed an event host-a wrote for another host: %+v\n%s", e, &ev)
				}
			}
			if !own {
				t.Errorf("host-a's own event was not relayed\n%s", &ev)
			}
		})
	}
}

// zero502 stop --lock-timeout 0 refuses at once when the host lock of a host over ssh is held (a
// watchdog tick, a flock(1) script), naming the holder, as it does for a local host: the host's
// own stop got --lock-timeout 10m0s (the default New puts in for 0) and waited ten minutes.
func TestStopWithLockTimeoutZeroRefusesAtOnceOverSSH(t *testing.T) {
	t.Parallel()
	f, cfg, held := v1WithTheFirstHostLockHeld(t)
	defer held.Release()
	ctx, h := context.Background(), cfg.Hosts[0]
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var ev eventLog
	err := Stop(sctx, cfg, StopTarget{Host: h.Name}, Options{RemoteBinary: bin, NoLockWait: true, Events: ev.add})
	if err == nil || sctx.Err() != nil || !strings.Contains(err.Error(), "a flock script of the test") {
		t.Fatalf("zero502 stop --lock-timeout 0 of %s (over ssh) with its host lock held: %v (deadline: %v); want a refusal at once naming the holder\n%s",
			h.Name, err, sctx.Err(), &ev)
	}
	if v := f.versions()[h.Name]; v != "v1" {
		t.Errorf("%s runs %q after the refused stop, want v1", h.Name, v)
	}
}

// A zero502 stop cancelled (Ctrl-C) while a host over ssh waits for its host lock ends there:
// the host's `zero502 host stop` hears the deployer go through stdin and gives up, so the lock
// coming free later stops nothing. It used to wait out its --lock-timeout and then stop the
// services, long after the operator had cancelled the stop.
func TestACancelledStopOverSSHStopsNothingWhenTheHostLockComesFree(t *testing.T) {
	t.Parallel()
	f, cfg, held := v1WithTheFirstHostLockHeld(t)
	ctx, h := context.Background(), cfg.Hosts[0]
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ev eventLog
	waiting := make(chan struct{})
	var once sync.Once
	events := func(e Event) {
		ev.add(e)
		if e.Host == h.Name && e.Step == stepLockWait {
			once.Do(func() { close(waiting) })
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- Stop(sctx, cfg, StopTarget{Host: h.Name}, Options{RemoteBinary: bin, LockTimeout: time.Minute, Events: events})
	}()
	select {
	case <-waiting:
	case err := <-done:
		held.Release()
		t.Fatalf("stop ended before its host waited for the lock: %v\n%s", err, &ev)
	case <-time.After(30 * time.Second):
		held.Release()
		t.Fatalf("host %s never said it waits for its lock\n%s", h.Name, &ev)
	}
	cancel()
	select {
	case err := <-done:
		t.Logf("the cancelled stop ended: %v", err)
	case <-time.After(30 * time.Second):
		held.Release()
		t.Fatalf("the cancelled stop did not end\n%s", &ev)
	}
	// The host's stop must be gone: with the lock free, nothing takes it and nothing changes.
	held.Release()
	time.Sleep(2 * time.Second) // a host stop still waiting would take the lock and publish now
	sp, err := spec.Read(spec.Path(f.stateDir(0)))
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range sp.Services {
		if svc.Stopped {
			t.Errorf("host %s: %s marked stopped by a stop cancelled before it had the lock\n%s", h.Name, svc.Name, &ev)
		}
	}
	if v := f.versions()[h.Name]; v != "v1" {
		t.Errorf("%s runs %q after the cancelled stop, want v1", h.Name, v)
	}
}

// v1WithTheFirstHostLockHeld is a fleet of two hosts, the first over ssh, with v1 deployed, and
// the first host's lock held by the test (a flock script of the test).
func v1WithTheFirstHostLockHeld(t *testing.T) (*fleet, *config.Config, *hostlock.Lock) {
	t.Helper()
	s := startSSHD(t)
	f := newFleet(t, 2)
	path, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	f.startLB(path)
	if _, err := f.deployer(cfg, nil, Options{RemoteBinary: bin}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	held, err := hostlock.TryAcquire(cfg.HostLockPath(cfg.Hosts[0]), Holder("a flock script of the test"))
	if err != nil {
		t.Fatal(err)
	}
	return f, cfg, held
}
