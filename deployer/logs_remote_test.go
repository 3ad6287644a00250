package deployer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// zero502 logs -f of a host over ssh, interrupted (Ctrl-C): the session's stdin closes, and the
// `zero502 host logs --follow` there ends with it, as every other host command does when its
// deployer goes; it must not follow the log on the host for ever with nobody reading (a quiet
// service's log is never written again, so no SIGPIPE ever ends it), nor keep the command
// waiting a rollback's budget for an end that never comes.
func TestFollowedLogsOverSSHEndWithTheirSession(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "logs.yaml", 1)
	log := f.runtimes["host-a"].LogPath("web")
	if err := os.MkdirAll(filepath.Dir(log), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte("== zero502 start\nhello from web\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Whatever follows the log at the test's end (the leak this test is about) is ended with it.
	testmain.Track(t, func() {
		for _, pid := range readersOf(log) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	var once strings.Builder // without -f: the log, then the end
	if err := Logs(context.Background(), cfg, "host-a", "web", false, &once, Options{RemoteBinary: bin}); err != nil ||
		!strings.Contains(once.String(), "hello from web") {
		t.Fatalf("zero502 logs over ssh: %v, printed %q; want the log", err, once.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncbuffer.Buffer{}
	done := make(chan error, 1)
	go func() { done <- Logs(ctx, cfg, "host-a", "web", true, out, Options{RemoteBinary: bin}) }()
	poll.Until(t, 30*time.Second, "zero502 logs -f over ssh prints the log", func() bool {
		return strings.Contains(out.String(), "hello from web")
	})
	if len(readersOf(log)) == 0 {
		t.Fatalf("no process on the host has %s open while zero502 logs -f follows it: the test proves nothing", log)
	}
	cancel() // Ctrl-C
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("zero502 logs -f, interrupted: %v; want nil (the user stopped it)", err)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("zero502 logs -f over ssh still ran 20s after it was interrupted: the host's zero502 host logs " +
			"does not end when its session's stdin closes, and the session waits out a rollback's budget")
	}
	poll.UntilNil(t, 20*time.Second, "no zero502 host logs left following the log on the host", func() error {
		if pids := readersOf(log); len(pids) > 0 {
			return fmt.Errorf("processes %v still have %s open", pids, log)
		}
		return nil
	})
}

// readersOf are the pids of the processes that have the file at path open.
func readersOf(path string) []int {
	var pids []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && target == path {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// A host whose `zero502 host logs -f` does not end when its session's stdin closes (a stuck
// host, an older zero502) holds an interrupted zero502 logs no longer than a look's end: logs
// change nothing and have nothing to roll back, so they get no rollback's budget.
func TestInterruptedLogsOfAHostThatIgnoresItAreCutOffSoon(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "logs.yaml", 1)
	cfg.Rollout.HealthyDeadline = 5 * time.Minute // a rollback's budget far past the bound below
	pidFile := filepath.Join(f.dir, "deaf.pid")
	deaf := filepath.Join(f.dir, "zero502-deaf-logs")
	script := "#!/bin/sh\nif [ \"$1 $2\" = \"host logs\" ]; then echo $$ > " + pidFile + "; echo 'hello from web'; exec sleep 600 </dev/null; fi\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(deaf, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncbuffer.Buffer{}
	done := make(chan error, 1)
	go func() { done <- Logs(ctx, cfg, "host-a", "web", true, out, Options{RemoteBinary: deaf}) }()
	poll.Until(t, 30*time.Second, "zero502 logs -f over ssh prints the log", func() bool {
		return strings.Contains(out.String(), "hello from web")
	})
	cancel() // Ctrl-C
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("zero502 logs -f of a host that ignores its end still ran 30s after it was interrupted (the rollback budget is %s)",
			New(cfg, Options{}).rollbackBudget(len(cfg.Services)))
	}
}
