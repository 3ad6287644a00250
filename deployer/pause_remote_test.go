package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// pauseOnSSHLockHost is a fleet whose lock host, host-a, is reached over ssh, with its state
// dir at a path that names two places: under root's home, which on host-a (sshd runs in a mount
// namespace of its own, remote_test.go) is sshd's own directory, and here this machine's. It
// returns the config's path and config, host-a's state dir as this machine names it (where a
// record written locally would land) and the same directory as host-a has it, seen from here.
func pauseOnSSHLockHost(t *testing.T, s *sshd) (path string, cfg *config.Config, here, onHost string) {
	t.Helper()
	f := newFleet(t, 2)
	_, cfg = f.remoteConfig(s, "fleet.yaml", 1)
	name := fmt.Sprintf("zero502-pause-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	here = filepath.Join(rootHome(), name)
	onHost = filepath.Join(s.dir, "home", name)
	if _, err := os.Stat(here); err == nil {
		t.Fatalf("%s exists before the test: remove it", here)
	}
	t.Cleanup(func() { os.RemoveAll(here); os.RemoveAll(onHost) })
	cfg.Hosts[0].StateDir = here
	path = f.write("fleet.yaml", cfg)
	return path, f.load(path), here, onHost
}

// onAnotherMachine runs the real zero502 with args in a mount namespace where root's home is an
// empty tmpfs: another machine, as far as the lock host's state dir goes, which only ssh reaches.
func onAnotherMachine(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "unshare", append([]string{"-m", "sh", "-c", `mount -t tmpfs tmpfs "$1" && shift && exec "$@"`, "sh", rootHome(), bin}, args...)...)
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("unshare zero502 %v: %v\n%s", args, err, out)
	}
	return string(out), 0
}

// A deploy paused after its canary, with the fleet lock on host-a over ssh, keeps its pause
// record beside that lock, on host-a, and none on the deployer's machine; `zero502 deploy
// promote` and `zero502 deploy abort` from another machine (where no local file is the record)
// find it there, the waiting deploy takes the decision, and the record is gone from host-a: the
// next decision says nothing is paused, naming host-a.
func TestPromoteAndAbortFromAnotherMachineFindThePauseOnTheSSHLockHost(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	for _, decision := range []string{Promote, Abort} {
		t.Run(decision, func(t *testing.T) {
			t.Parallel()
			path, cfg, here, onHost := pauseOnSSHLockHost(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel() // a deploy still paused when the test ends stops waiting
			var ev eventLog
			d := New(cfg, Options{RemoteBinary: bin, Events: ev.add})
			d.started = d.clock.Now()
			d.mux = ssh.NewMux("") // as Deploy has: the record's reads over the lock host's connection
			defer d.mux.Close()
			hold, err := d.fleetLock(ctx, "v2")
			if err != nil {
				t.Fatalf("fleet lock on host-a: %v\nevents:\n%s", err, &ev)
			}
			d.fleet = hold
			defer hold.Release()
			rep := &report.Report{Version: "v2", Hosts: []report.HostReport{{Host: "host-a", From: "v1", To: "v2"}, {Host: "host-b", From: "v1", To: "v2"}}}
			type result struct {
				decision string
				err      error
			}
			paused := make(chan result, 1)
			go func() {
				got, err := d.pauseAfterCanary(ctx, "v2", rep, batch{first: 0, end: 1, canary: true})
				paused <- result{got, err}
			}()
			var early *result
			poll.Until(t, 30*time.Second, "the deploy paused after its canary", func() bool {
				select {
				case r := <-paused:
					early = &r
					return true
				default:
				}
				return strings.Contains(ev.String(), "paused after the canary")
			})
			if early != nil {
				t.Fatalf("the deploy did not stay paused: %q, %v\nevents:\n%s", early.decision, early.err, &ev)
			}
			local := filepath.Join(here, "paused.json")
			if _, err := os.Stat(local); err == nil {
				t.Errorf("the pause record is at %s on the deployer's machine; want it on host-a, beside the fleet lock", local)
			}
			remote := filepath.Join(onHost, "paused.json")
			if st, err := os.Stat(remote); err != nil {
				t.Errorf("no pause record on host-a (%s there): %v\nevents:\n%s", local, err, &ev)
			} else if st.Mode().Perm() != 0o600 {
				t.Errorf("the pause record on host-a has mode %v; want 0600, as the fleet lock", st.Mode().Perm())
			}
			if !strings.Contains(ev.String(), "on host host-a (rollout.lock_host)") {
				t.Errorf("the pause event does not say the record is on host-a:\n%s", &ev)
			}

			out, code := onAnotherMachine(t, "deploy", decision, "--config", path, "--remote-binary", bin)
			if code != 0 || !strings.Contains(out, "the paused deploy took it") {
				t.Fatalf("deploy %s from another machine: exit %d; want 0, the paused deploy taking it\n%s\nevents:\n%s", decision, code, out, &ev)
			}
			select {
			case r := <-paused:
				if r.err != nil || r.decision != decision {
					t.Fatalf("the paused deploy after the %s: %q, %v; want %q\nevents:\n%s", decision, r.decision, r.err, decision, &ev)
				}
			case <-time.After(time.Minute):
				t.Fatalf("the paused deploy did not take the %s within a minute\nevents:\n%s", decision, &ev)
			}
			if !strings.Contains(ev.String(), decision+" by ") {
				t.Errorf("the paused deploy does not say who decided:\n%s", &ev)
			}
			if _, err := os.Stat(remote); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the pause record on host-a after the %s: %v; want it removed", decision, err)
			}
			out, code = onAnotherMachine(t, "deploy", Promote, "--config", path, "--remote-binary", bin)
			if code != 2 || !strings.Contains(out, "no deploy of this fleet is paused") || !strings.Contains(out, "on host host-a") {
				t.Errorf("a promote after the %s: exit %d; want 2, nothing paused on host host-a\n%s", decision, code, out)
			}
			if _, err := os.Stat(here); err == nil {
				t.Errorf("the deployers made %s on their own machine; the lock host's state dir is host-a's", here)
			}
		})
	}
}

// A lock host whose zero502 cannot keep the pause record (here: no zero502 at the path the
// deployer is told) fails promote and the pause itself with an error naming the host and saying
// what to do, not "nothing is paused".
func TestAPauseRecordTheSSHLockHostCannotKeepIsAnErrorNamingIt(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	_, cfg, _, _ := pauseOnSSHLockHost(t, s)
	opts := Options{RemoteBinary: "/nonexistent/zero502"}
	_, err := Decide(context.Background(), cfg, Promote, opts, time.Minute)
	if err == nil || errors.Is(err, ErrNotPaused) || !strings.Contains(err.Error(), "host host-a (rollout.lock_host)") ||
		!strings.Contains(err.Error(), "zero502 host install --ssh") {
		t.Errorf("promote with no zero502 on the lock host: %v; want an error naming host-a and how to install it", err)
	}
	d := New(cfg, opts)
	rep := &report.Report{Version: "v2", Hosts: []report.HostReport{{Host: "host-a", From: "v1"}, {Host: "host-b", From: "v1"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a pause recorded somewhere else waits: for no decision
	defer cancel()
	_, err = d.pauseAfterCanary(ctx, "v2", rep, batch{first: 0, end: 1, canary: true})
	if err == nil || !strings.Contains(err.Error(), "record the pause after the canary") || !strings.Contains(err.Error(), "host host-a") {
		t.Errorf("a pause the lock host cannot record: %v; want an error naming host-a", err)
	}
}

// The lock host says, as it gives a deploy the fleet lock over ssh, whether a pause record lies
// beside the lock: a deploy past its checks ends a stale one there (endPause), and asks the host
// nothing more when there is none (no extra session per deploy).
func TestTheSSHLockHostSaysWhetherAPauseIsLeftWhenItGivesTheLock(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	_, cfg, _, onHost := pauseOnSSHLockHost(t, s)
	if err := os.MkdirAll(onHost, 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := json.Marshal(Pause{Version: "v2", Canary: []string{"host-a"}, Since: time.Now(), By: "a stopped deploy"})
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(onHost, "paused.json")
	if err := os.WriteFile(record, stale, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, left := range []bool{true, false} {
		var ev eventLog
		d := New(cfg, Options{RemoteBinary: bin, Events: ev.add})
		d.mux = ssh.NewMux("")
		hold, err := d.fleetLock(context.Background(), "v3")
		if err != nil {
			t.Fatalf("fleet lock on host-a: %v\nevents:\n%s", err, &ev)
		}
		if !d.lockedSaidPause || (d.pausedAtLock != nil) != left {
			t.Errorf("pause left %v: the lock host said %v, record %+v", left, d.lockedSaidPause, d.pausedAtLock)
		}
		d.endPause("v3")
		if _, err := os.Stat(record); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pause left %v: after endPause the record on host-a: %v; want it gone", left, err)
		}
		if said := strings.Contains(ev.String(), "the deploy of v2 paused after its canary (host-a) is over"); said != left {
			t.Errorf("pause left %v: the deploy says the pause is over: %v\nevents:\n%s", left, said, &ev)
		}
		_ = hold.Release()
		d.mux.Close()
	}
}
