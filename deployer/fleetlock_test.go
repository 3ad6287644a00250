package deployer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// Two deployers on different machines meet at the one fleet lock on the lock host (host-a,
// over ssh): deployer A holds it through its ssh session; deployer B, in a mount namespace of
// its own where the lock host's state dir is an empty tmpfs (another machine's filesystem, as
// far as local files go), is refused naming A. `zero502 lock status` sees A; a maintenance lock
// (lock acquire -m) refuses every deploy until lock release; and when A is killed, the kernel on
// the lock host frees the lock.
func TestTwoDeployersOnDifferentMachinesMeetAtTheLockHost(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	path, cfg := f.remoteConfig(s, "ssh.yaml", 2)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{RemoteBinary: bin}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("first deploy: %v", err)
	}
	slowCfg := f.load(path)
	slowCfg.Hooks.PreDeploy = config.Hook{Command: []string{"sh", "-c", "sleep 5"}, Timeout: 30 * time.Second}
	// A's lock is a lease of 1.5s on host-a, which its renewals (every 0.5s) keep through the hook
	slowCfg.Rollout.LockLease = 1500 * time.Millisecond
	slow := f.write("slow.yaml", slowCfg)
	startA := func(version string) (*exec.Cmd, *syncbuffer.Buffer) {
		out := &syncbuffer.Buffer{}
		a := exec.Command(bin, "deploy", "--config", slow, "--version", version, "--remote-binary", bin)
		a.Stdout, a.Stderr = out, out
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		testmain.Track(t, func() { _ = a.Process.Kill(); _, _ = a.Process.Wait() })
		poll.Until(t, 30*time.Second, "deployer A holds the fleet lock on host-a", func() bool {
			return strings.Contains(out.String(), "(rollout.lock_host), held through its ssh session")
		})
		return a, out
	}
	a, outA := startA("v2")
	time.Sleep(2 * slowCfg.Rollout.LockLease) // past two leases: only A's renewals keep the lock now

	lockDir := filepath.Dir(cfg.FleetLockPath())
	onOtherMachine := func(args ...string) (string, int) {
		t.Helper()
		c := exec.Command("unshare", append([]string{"-m", "sh", "-c", `mount -t tmpfs tmpfs "$1" && shift && exec "$@"`, "sh", lockDir}, args...)...)
		out, err := c.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("unshare %v: %v\n%s", args, err, out)
		}
		return string(out), 0
	}
	if out, code := onOtherMachine("test", "!", "-e", cfg.FleetLockPath()); code != 0 {
		t.Fatalf("the other machine's view still has the lock file %s (the namespace proves nothing): %s", cfg.FleetLockPath(), out)
	}
	out, code := onOtherMachine(bin, "deploy", "--config", path, "--version", "v3", "--lock-timeout", "0", "--remote-binary", bin)
	if code != 2 || !strings.Contains(out, "another deploy of this fleet is running") || !strings.Contains(out, "on host host-a (rollout.lock_host)") ||
		!strings.Contains(out, "zero502 deploy --version v2") {
		t.Fatalf("deployer B on another machine while A deploys: exit %d; want 2 (refused), naming A's lock on host-a\n%s\nA:\n%s", code, out, outA)
	}
	if out, code := runZero502(t, "lock", "status", "--config", path, "--remote-binary", bin); code != 0 ||
		!strings.Contains(out, "on host-a: held by a running deploy") || !strings.Contains(out, "zero502 deploy --version v2") {
		t.Errorf("lock status while A deploys: exit %d\n%s", code, out)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("deployer A: %v\n%s", err, outA)
	}
	if out, code := runZero502(t, "lock", "status", "--config", path, "--remote-binary", bin); code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "on host-a: free") {
		t.Errorf("lock status after A: exit %d\n%s", code, out)
	}

	// A maintenance lock, taken by hand, keeps every deploy out until it is lifted.
	if out, code := runZero502(t, "lock", "acquire", "--config", path, "--remote-binary", bin, "-m", "DB migration until 18:00"); code != 0 {
		t.Fatalf("lock acquire: exit %d\n%s", code, out)
	} else if !strings.Contains(out, "locked for maintenance by") || strings.Contains(out, "held by a running deploy") {
		t.Errorf("lock acquire says %q; want the maintenance lock alone, no deploy running", out)
	}
	out, code = onOtherMachine(bin, "deploy", "--config", path, "--version", "v3", "--lock-timeout", "0", "--remote-binary", bin)
	if code != 2 || !strings.Contains(out, "locked for maintenance on host host-a") || !strings.Contains(out, "DB migration until 18:00") {
		t.Fatalf("a deploy during the maintenance lock: exit %d; want 2 (refused) naming it\n%s", code, out)
	}
	if out, code := runZero502(t, "lock", "acquire", "--config", path, "--remote-binary", bin, "-m", "again"); code != 1 || !strings.Contains(out, "already locked for maintenance") {
		t.Errorf("a second lock acquire: exit %d; want 1, already locked\n%s", code, out)
	}
	if out, code := runZero502(t, "lock", "release", "--config", path, "--remote-binary", bin); code != 0 || !strings.Contains(out, "free") {
		t.Fatalf("lock release: exit %d\n%s", code, out)
	}

	// The deployer dies holding the lock: its ssh session ends, and the lock host's kernel frees
	// the flock with the process that held it.
	a, outA = startA("v3")
	_ = a.Process.Signal(syscall.SIGKILL)
	_, _ = a.Process.Wait()
	poll.UntilNil(t, 30*time.Second, "the fleet lock free after its deployer was killed", func() error {
		out, code := runZero502(t, "lock", "status", "--config", path, "--remote-binary", bin)
		if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "on host-a: free") {
			return errors.New(out)
		}
		return nil
	})
	for host, v := range f.versions() {
		if v != "v2" {
			t.Errorf("%s runs %q, want v2 (A's v3 was killed in its pre_deploy hook, before any host)\nA:\n%s", host, v, outA)
		}
	}
	// status reads the ssh hosts there, with the binary --remote-binary names (zero502 is not on
	// this test machine's PATH): every host agrees with its spec.
	if out, code := runZero502(t, "status", "--config", path, "--remote-binary", bin); code != 0 || !strings.Contains(out, "host-b") {
		t.Errorf("status --remote-binary: exit %d; want 0, every host on its spec\n%s", code, out)
	}
}

// The wait for the lock host's first answer to `zero502 host fleet-lock` is bounded: a lock
// host reached over ssh whose fleet-lock never answers (a stuck process, a hung lock file
// system; keep-alives still pass) refuses the deploy within its lock wait and a look's budget,
// naming the lock host, instead of holding it until someone interrupts it.
func TestAFleetLockHostThatNeverAnswersDoesNotHangTheDeploy(t *testing.T) {
	t.Parallel()
	f, cfg := fakeSSHFleet(t, "stuck.yaml", 0) // the fleet lock lives on the stuck host
	fake := filepath.Join(f.dir, "fake-ssh")
	script := `#!/bin/sh
case "$*" in *" host fleet-lock "*) exec sleep 300 ;; esac
exit 255
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := f.deployer(cfg, nil, Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{}, NoLockWait: true, lookBudget: 2 * time.Second})
	done := make(chan error, 1)
	var rep *report.Report
	go func() {
		var err error
		rep, err = d.Deploy(ctx, "v2")
		done <- err
	}()
	select {
	case err := <-done:
		var refused *refusedError
		if err == nil {
			t.Fatalf("deploy succeeded against a lock host that never answered: %+v", rep)
		}
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), cfg.Hosts[0].Name) {
			t.Errorf("deploy error %v: want a refusal naming the lock host %s", err, cfg.Hosts[0].Name)
		}
	case <-time.After(45 * time.Second):
		cancel() // let the session end (cut off after its budget)
		<-done
		t.Fatalf("the deploy still waited for the fleet lock 45s after it started, with --lock-timeout 0: " +
			"a lock host that never answers hangs it until someone interrupts it")
	}
}

// zero502 lock status|acquire|release against a lock host that never answers (reachable, its
// zero502 stuck) ends within a look's budget, naming the lock host: it waits for nothing there.
func TestALockOpOnALockHostThatNeverAnswersEnds(t *testing.T) {
	t.Parallel()
	f, cfg := fakeSSHFleet(t, "stuck-op.yaml", 0)
	fake := filepath.Join(f.dir, "fake-ssh")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LockOp(context.Background(), cfg, LockStatusOp, "", Options{RemoteBinary: bin, SSH: fake, lookBudget: 2 * time.Second})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), cfg.Hosts[0].Name) {
			t.Errorf("lock status: %v; want an error saying lock host %s did not answer", err, cfg.Hosts[0].Name)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("zero502 lock status still waited 30s for a lock host that never answers")
	}
}
