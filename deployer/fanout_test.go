package deployer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/ssh"
)

// eachHost calls every index once, never more than --parallel at once, and with more hosts
// than the bound it does reach the bound (the looks overlap).
func TestEachHostCallsEveryHostOnceWithinTheBound(t *testing.T) {
	t.Parallel()
	for _, bound := range []int{1, 3, 100} {
		d := &Deployer{opts: Options{Parallel: bound}}
		var now, peak atomic.Int32
		calls := make([]int32, 10)
		var mu sync.Mutex
		d.eachHost(hostIndexes(len(calls)), func(i int) {
			n := now.Add(1)
			mu.Lock()
			peak.Store(max(peak.Load(), n))
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // long enough for the others to start, if allowed
			atomic.AddInt32(&calls[i], 1)
			now.Add(-1)
		})
		for i, c := range calls {
			if c != 1 {
				t.Errorf("--parallel %d: host %d looked at %d times, want once", bound, i, c)
			}
		}
		want := int32(min(bound, len(calls)))
		if p := peak.Load(); p > want || bound > 1 && p < 2 {
			t.Errorf("--parallel %d: %d looks at once, want at most %d (and some overlap)", bound, p, want)
		}
	}
}

// A deploy over ssh opens one step session per host, at preflight. The fleet lock's host, whose
// sessions are several (the lock's hold, its step), shares one connection through a control
// master that answers `ssh -O check` mid-deploy; every other host's one session is a plain
// connection, with no master to start and end. At the end the master was told to exit, none is
// left running, and the 0700 directory of its socket is gone.
func TestDeployOverSSHSharesTheLockHostsConnectionAndLeavesNoMaster(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 2)
	f.startLB(filepath.Join(f.dir, "ssh.yaml"))
	calls := filepath.Join(f.dir, "ssh.calls")
	wrapper := f.sshWrapper(`echo "$*" >> ` + calls)
	d := f.deployer(cfg, nil, Options{RemoteBinary: bin, SSH: wrapper})
	var (
		checked  atomic.Bool
		muxDir   string
		checkErr error
		once     sync.Once
	)
	d.opts.Events = func(e Event) {
		if e.Host != "host-b" || e.Step != stepStart {
			return
		}
		once.Do(func() {
			muxDir = d.mux.Dir()
			sockets, _ := filepath.Glob(filepath.Join(muxDir, "*"))
			if len(sockets) == 0 {
				checkErr = fmt.Errorf("no control socket in %q", muxDir)
				return
			}
			for _, sock := range sockets {
				c, err := ssh.Cmd("", cfg.Hosts[0].SSH, []string{"-o", "ControlPath=" + sock, "-O", "check"})
				if err != nil {
					checkErr = err
					return
				}
				if out, err := c.CombinedOutput(); err != nil {
					checkErr = fmt.Errorf("ssh -O check %s: %w: %s", sock, err, out)
					return
				}
			}
			checked.Store(true)
		})
	}
	if _, err := d.Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1 over ssh: %v", err)
	}
	if !checked.Load() {
		t.Fatalf("no control master answered mid-deploy (dir %q): %v", muxDir, checkErr)
	}
	data, _ := os.ReadFile(calls)
	log := string(data)
	// The sessions: the fleet lock's hold on host-a (rollout.lock_host, the first host), and one
	// step per host opened at preflight (its look first, then its turn), and no look of its own;
	// host-a's two over its shared connection, host-b's one a connection of its own.
	if sessions := strings.Count(log, "zero502 host "); sessions != 3 {
		t.Errorf("%d sessions; want the 3 (the lock, a step per host):\n%s", sessions, log)
	}
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.Contains(l, "zero502 host ") {
			continue
		}
		onA := strings.Contains(l, "--host host-a") || strings.Contains(l, "host fleet-lock")
		if shared := strings.Contains(l, "ControlMaster=auto"); shared != onA {
			t.Errorf("session %q: over the shared connection %v, want %v (only the lock host's sessions share one)", l, shared, onA)
		}
	}
	for _, h := range []string{"host-a", "host-b"} {
		if n := strings.Count(log, "host step --config - --host "+h+" --version v1 --lock-timeout 10m0s --look-first"); n != 1 {
			t.Errorf("%s: %d steps opened with --look-first, want the one for the whole deploy:\n%s", h, n, log)
		}
	}
	if strings.Contains(log, "host look") {
		t.Errorf("a deploy over ssh ran host look besides the steps' own looks:\n%s", log)
	}
	if !strings.Contains(log, "-O exit") {
		t.Errorf("no master was told to exit at the end:\n%s", log)
	}
	if _, err := os.Stat(muxDir); !os.IsNotExist(err) {
		t.Errorf("the control sockets' directory %s is still there: %v", muxDir, err)
	}
	if out, err := exec.Command("pgrep", "-f", "ControlPath="+muxDir).Output(); err == nil {
		t.Errorf("an ssh master of the deploy still runs:\n%s", out)
	}
}
