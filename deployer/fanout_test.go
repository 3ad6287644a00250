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

// A deploy over ssh keeps one connection per host and one step session per host, opened at
// preflight: mid-deploy its control master answers `ssh -O check`; at the end every master was told to exit, none is left running, and the
// 0700 directory of their sockets is gone.
func TestDeployOverSSHReusesOneConnectionPerHostAndLeavesNoMaster(t *testing.T) {
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
				c, err := ssh.Cmd("", cfg.Hosts[1].SSH, []string{"-o", "ControlPath=" + sock, "-O", "check"})
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
	// The sessions: the fleet lock's hold, and one step per host opened at preflight (its look
	// first, then its turn), none of them a connection of its own, and no look of its own.
	if n, sessions := strings.Count(log, "ControlMaster=auto"), strings.Count(log, "zero502 host "); n != sessions || n != 3 {
		t.Errorf("%d sessions asked for the shared connection of %d; want the 3 (the lock, a step per host):\n%s", n, sessions, log)
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
