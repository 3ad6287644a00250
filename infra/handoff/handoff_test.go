package handoff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// The helper server: this test binary, started by a test (and then again by its own upgrade,
// which runs os.Args again), serving its pid over HTTP on a listener it hands on.
const (
	helperEnv   = "ZERO502_HANDOFF_HELPER"  // pid file path
	helperAddr  = "ZERO502_HANDOFF_ADDR"    // where it listens
	helperBreak = "ZERO502_HANDOFF_BREAKER" // a file whose presence makes a new process give up
	helperSlow  = "ZERO502_HANDOFF_SLOW"    // a file whose presence holds a new process short of ready
	helperDrain = "ZERO502_HANDOFF_DRAIN"   // how long a stopped process goes on (its drain window)
	// a file whose presence holds a new process once it is ready, before the old one hears it;
	// the process writes its pid to this path + ".held" as it begins to wait
	helperHold    = "ZERO502_HANDOFF_HOLD"
	helperTimeout = "ZERO502_HANDOFF_TIMEOUT" // how long a new process gets to be ready (10s unless set)
	// helperEarlier makes the helper, as the old process of an upgrade, do as the earlier
	// version did (asEarlierParent)
	helperEarlier = "ZERO502_HANDOFF_EARLIER"
)

func TestHandoffHelperProcess(t *testing.T) {
	pidFile := os.Getenv(helperEnv)
	if pidFile == "" {
		t.Skip("the helper server of the hand-off tests")
	}
	if hold := os.Getenv(helperHold); hold != "" {
		holdReady = func() { holdWhile(hold) }
	}
	asEarlierParent = os.Getenv(helperEarlier) != ""
	os.Exit(helperMain(pidFile, os.Getenv(helperAddr), os.Getenv(helperBreak), os.Getenv(helperSlow)))
}

// holdWhile is the helper's holdReady: it says so in hold + ".held" (its pid) and waits while
// the file hold exists, 20s at most.
func holdWhile(hold string) {
	if _, err := os.Stat(hold); err != nil {
		return
	}
	if err := os.WriteFile(hold+".held", []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(hold); err != nil {
			return
		}
	}
}

func helperMain(pidFile, addr, breaker, slow string) int {
	timeout := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv(helperTimeout)); err == nil {
		timeout = d
	}
	u, err := New(Options{PIDFile: pidFile, Timeout: timeout})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer u.Close()
	if _, err := os.Stat(breaker); err == nil {
		err := errors.New("config says no: broken on purpose")
		u.Fail(err)
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ln, err := u.Listen("tcp", addr)
	if err != nil {
		u.Fail(err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx = u.UpgradeOnHangup(ctx, nil)
	for start := time.Now(); u.Inherited() && slow != "" && time.Since(start) < 20*time.Second; {
		if _, err := os.Stat(slow); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := u.Ready(); err != nil {
		return 1
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, strconv.Itoa(os.Getpid()))
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	<-ctx.Done()
	if d, err := time.ParseDuration(os.Getenv(helperDrain)); err == nil && !u.HandedOff() {
		time.Sleep(d) // a stop's drain window
	}
	_ = srv.Shutdown(context.Background())
	return 0
}

// startHelper starts the helper server with its pid file and address (and env), returning it
// and a channel that gets its exit; when the test ends it and any process it upgraded to are
// killed.
func startHelper(t *testing.T, pidFile, addr string, env ...string) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHandoffHelperProcess$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+pidFile, helperAddr+"="+addr), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if pid, err := ReadPID(pidFile); err == nil && pid != cmd.Process.Pid {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		_ = cmd.Process.Kill()
	})
	return cmd, exited
}

// whoServes is the pid that answered on addr, 0 when nothing did.
func whoServes(addr string) int {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	pid, _ := strconv.Atoi(string(b))
	return pid
}

// A SIGHUP starts the executable again with the listener; once it is ready the old process
// exits and the pid file names the new one. A new process that gives up leaves the serving one
// in place, and the request names its reason.
func TestHandoffUpgradesAndSurvivesABrokenSuccessor(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "run", "helper.pid")
	breaker := filepath.Join(dir, "broken")
	ps := tcpserver.FreePorts(t, 1) // below the ephemeral range: no outgoing connection takes it first
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd, exited := startHelper(t, pidFile, addr, helperBreak+"="+breaker)
	first := cmd.Process.Pid
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == first })

	out, err := Request{PIDFile: pidFile, Timeout: 20 * time.Second}.Do(context.Background())
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if out.OldPID != first || out.NewPID == first || out.NewPID == 0 || out.Seq != 1 {
		t.Fatalf("outcome %+v: want old %d, a new pid, seq 1", out, first)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the old process exited with %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the old process did not exit after the hand-off")
	}
	if pid := whoServes(addr); pid != out.NewPID {
		t.Fatalf("pid %d answers on %s, want the new %d", pid, addr, out.NewPID)
	}
	if pid, _ := ReadPID(pidFile); pid != out.NewPID {
		t.Fatalf("pid file names %d, want %d", pid, out.NewPID)
	}

	if err := os.WriteFile(breaker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// the new process may still wait for its parent's exit to be seen; until then an upgrade
	// is refused with that reason, and then it goes through to the broken successor
	var failed error
	poll.Until(t, 10*time.Second, "an upgrade that reaches the broken successor", func() bool {
		_, failed = Request{PIDFile: pidFile, Timeout: 20 * time.Second}.Do(context.Background())
		return failed == nil || strings.Contains(failed.Error(), "broken on purpose")
	})
	if !errors.Is(failed, errFailed) || !strings.Contains(failed.Error(), fmt.Sprintf("pid %d keeps serving", out.NewPID)) {
		t.Fatalf("upgrade to a broken successor: %v; want ErrFailed naming the reason and the serving pid", failed)
	}
	if pid := whoServes(addr); pid != out.NewPID {
		t.Fatalf("after the failed upgrade pid %d answers, want %d still", pid, out.NewPID)
	}
	a, err := readAttempt(attemptPath(pidFile))
	if err != nil || a.State != Failed || a.Seq < 2 || a.PID != out.NewPID {
		t.Fatalf("attempt record %+v, %v; want a failed attempt by %d", a, err, out.NewPID)
	}
}

func TestRequestNamesWhatIsWrongBeforeSignalling(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pid")
	if err := os.WriteFile(garbage, []byte("twelve\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "stale.pid")
	if err := os.WriteFile(stale, []byte(strconv.Itoa(done.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pidFile string
		timeout       time.Duration
		wants         []string
	}{
		{"no pid file", filepath.Join(dir, "none.pid"), time.Second, []string{"none.pid", "does not exist", "--pid-file"}},
		{"not a pid", garbage, time.Second, []string{"garbage.pid", `"twelve"`, "not a process id"}},
		{"process gone", stale, time.Second, []string{strconv.Itoa(done.Process.Pid), "not running", "stale pid file"}},
		{"no timeout", stale, 0, []string{"timeout 0s", "must be positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Request{PIDFile: tc.pidFile, Timeout: tc.timeout}.Do(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestDefaultPIDFilePrefersTheUnitsRuntimeDirectory(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"systemd RuntimeDirectory=", map[string]string{"RUNTIME_DIRECTORY": "/run/zero502", "XDG_RUNTIME_DIR": "/run/user/1000"}, "/run/zero502/lb.pid"},
		{"several runtime directories: the first", map[string]string{"RUNTIME_DIRECTORY": "/run/a:/run/b"}, "/run/a/lb.pid"},
		{"a user session", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, "/run/user/1000/zero502/lb.pid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultPIDFile("lb", env(tc.env)); got != filepath.FromSlash(tc.want) {
				t.Fatalf("DefaultPIDFile = %q, want %q", got, tc.want)
			}
		})
	}
	bare := DefaultPIDFile("edge", env(nil))
	if filepath.Base(bare) != "edge.pid" || !filepath.IsAbs(bare) {
		t.Fatalf("without a runtime directory: %q, want an absolute path to edge.pid", bare)
	}
}

// The new process gets the listening sockets and runs as this one, so the executable must be a
// file no other user could have put there: run from a directory everyone may write, an upgrade is
// refused before anything starts, the record says why, and the serving process goes on.
func TestAnUpgradeRefusesAnExecutableOthersCouldReplace(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask: anyone may write here
		t.Fatal(err)
	}
	bin := filepath.Join(open, "helper.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "run", "helper.pid")
	ps := tcpserver.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd := exec.Command(bin, "-test.run=^TestHandoffHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+pidFile, helperAddr+"="+addr, helperBreak+"="+filepath.Join(dir, "never"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid, err := ReadPID(pidFile); err == nil && pid != cmd.Process.Pid { // an upgrade that went through
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	first := cmd.Process.Pid
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == first })

	_, err = Request{PIDFile: pidFile, Timeout: 20 * time.Second}.Do(context.Background())
	if !errors.Is(err, errFailed) || !strings.Contains(err.Error(), "refused to run "+bin) || !strings.Contains(err.Error(), open) {
		t.Fatalf("upgrade from %s: %v; want it refused naming the executable and the directory others may write", open, err)
	}
	if pid := whoServes(addr); pid != first {
		t.Fatalf("after the refused upgrade pid %d answers, want %d still", pid, first)
	}
	a, err := readAttempt(attemptPath(pidFile))
	if err != nil || a.State != Failed || a.NewPID != 0 {
		t.Fatalf("attempt record %+v, %v; want a failed attempt that started no process", a, err)
	}
}

// A stop (SIGTERM) while an upgrade's new process is starting ends the attempt: the new process
// is killed before it is ready, so it never serves beside the old one's drain, nor after it.
func TestAStopDuringAnUpgradeKillsTheNewProcessBeforeItServes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "run", "helper.pid")
	slow := filepath.Join(dir, "slow")
	ps := tcpserver.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd, exited := startHelper(t, pidFile, addr, helperSlow+"="+slow, helperDrain+"=2s")
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == cmd.Process.Pid })
	if err := os.WriteFile(slow, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the upgrade starting", func() bool {
		a, err := readAttempt(attemptPath(pidFile))
		return err == nil && a.State == Starting
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the stop under way: the old process drains for 2s
	_ = os.Remove(slow)                // a new process still alive becomes ready meanwhile
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the old process did not exit after SIGTERM")
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if pid := whoServes(addr); pid != 0 {
			t.Fatalf("pid %d serves on %s after the old process stopped during its upgrade: the new process outlived the stop", pid, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// heldPID is the pid a helper held short of telling the old process it is ready wrote beside
// hold (holdWhile), 0 while there is none.
func heldPID(hold string) int {
	b, err := os.ReadFile(hold + ".held")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(b))
	return pid
}

// The pid file names the process that serves. A new process that is ready but refused by the
// old one (its timeout ran out first, and it was killed) never appears there: SIGHUP and
// `zero502 lb upgrade` go on reaching the old one, which serves. One the old process accepts is
// named there by the time the attempt is recorded ready, and stays named once the old one exited.
func TestThePIDFileNamesANewProcessOnlyOnceTheOldOneAcceptedIt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "run", "helper.pid")
	hold := filepath.Join(dir, "hold")
	ps := tcpserver.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd, exited := startHelper(t, pidFile, addr, helperHold+"="+hold, helperTimeout+"=3s")
	first := cmd.Process.Pid
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == first })

	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Request{PIDFile: pidFile, Timeout: 20 * time.Second}.Do(context.Background())
	if !errors.Is(err, errFailed) || !strings.Contains(err.Error(), "not ready within 3s") {
		t.Fatalf("upgrade to a new process held short of telling the old one: %v; want it failed on the old one's timeout", err)
	}
	refused := heldPID(hold)
	if refused == 0 || refused == first {
		t.Fatalf("held pid %d: the new process never got ready, so the old one refused nothing", refused)
	}
	if pid, err := ReadPID(pidFile); err != nil || pid != first {
		t.Fatalf("after the old process refused the ready new one (pid %d, killed), the pid file names %d (%v); want the old %d, which serves",
			refused, pid, err, first)
	}
	if pid := whoServes(addr); pid != first {
		t.Fatalf("after the failed upgrade pid %d answers, want %d still", pid, first)
	}

	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	out, err := Request{PIDFile: pidFile, Timeout: 20 * time.Second}.Do(context.Background())
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if out.OldPID != first || out.NewPID == first || out.NewPID == refused || out.NewPID == 0 {
		t.Fatalf("outcome %+v: want old %d and a new pid (neither it nor the refused %d)", out, first, refused)
	}
	if pid, err := ReadPID(pidFile); err != nil || pid != out.NewPID {
		t.Fatalf("once the attempt is recorded ready the pid file names %d (%v), want the new %d", pid, err, out.NewPID)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the old process exited with %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the old process did not exit after the hand-off")
	}
	if pid := whoServes(addr); pid != out.NewPID {
		t.Fatalf("pid %d answers on %s, want the new %d", pid, addr, out.NewPID)
	}
	if pid, err := ReadPID(pidFile); err != nil || pid != out.NewPID {
		t.Fatalf("after the old process exited the pid file names %d (%v), want the new %d", pid, err, out.NewPID)
	}
}

// An upgrade from a process of the earlier version (which leaves the pid file to its successor
// and removes it as it exits while it names itself) never leaves the pid file missing, nor
// naming the old process once it is gone: the new process, not told that its parent writes the
// pid file, writes its own as it reports ready, as before; the attempt says the new pid.
func TestAnUpgradeFromTheEarlierVersionAlwaysHasAPIDFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "run", "helper.pid")
	ps := tcpserver.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd, exited := startHelper(t, pidFile, addr, helperEarlier+"=1")
	first := cmd.Process.Pid
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == first })

	// Every millisecond until the old process exited: is there a pid file?
	stop := make(chan struct{})
	seen := make(chan []string, 1)
	go func() {
		var bad []string
		for {
			select {
			case <-stop:
				seen <- bad
				return
			default:
			}
			if _, err := ReadPID(pidFile); err != nil {
				bad = append(bad, err.Error())
			}
			time.Sleep(time.Millisecond)
		}
	}()
	out, err := Request{PIDFile: pidFile, Timeout: 20 * time.Second}.Do(context.Background())
	if err != nil {
		close(stop)
		t.Fatalf("upgrade from the earlier version: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the old process did not exit after the hand-off")
	}
	close(stop)
	if bad := <-seen; len(bad) > 0 {
		t.Errorf("during the upgrade from the earlier version the pid file was missing %d times, first: %s", len(bad), bad[0])
	}
	if out.NewPID == first || out.NewPID == 0 {
		t.Errorf("the attempt says the new process is %d; want the new pid, not the old %d", out.NewPID, first)
	}
	if pid, err := ReadPID(pidFile); err != nil || pid != out.NewPID || whoServes(addr) != out.NewPID {
		t.Errorf("after the old process exited the pid file names %d (%v), %d serves; want the new %d", pid, err, whoServes(addr), out.NewPID)
	}
}

// A stop (SIGTERM) that ends an attempt whose new process is ready but not yet accepted kills
// that process: the pid file goes on naming the old process while it drains, and is gone once it
// exited; it never names the killed one.
func TestAStopDuringAnUpgradeLeavesThePIDFileToTheOldProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "run", "helper.pid")
	hold := filepath.Join(dir, "hold")
	ps := tcpserver.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd, exited := startHelper(t, pidFile, addr, helperHold+"="+hold, helperDrain+"=2s")
	first := cmd.Process.Pid
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == first })
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the new process ready, held short of telling the old one", func() bool { return heldPID(hold) != 0 })
	refused := heldPID(hold)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the attempt recorded as failed by the stop", func() bool {
		a, err := readAttempt(attemptPath(pidFile))
		return err == nil && a.State == Failed
	})
	if pid, err := ReadPID(pidFile); err != nil || pid != first {
		t.Fatalf("while the old process drains after a stop that killed the ready new one (pid %d), the pid file names %d (%v); want the old %d",
			refused, pid, err, first)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the old process did not exit after SIGTERM")
	}
	if pid, err := ReadPID(pidFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the old process exited the pid file names %d (%v); want it removed, never naming the killed new process %d", pid, err, refused)
	}
}

// An install that switches a symlink to the new version (/usr/local/bin/zero502 ->
// /opt/zero502/<version>/zero502, Homebrew's bin, a Nix profile) is upgraded to what the link
// names now: the new process is the executable as the server was started by name, re-read from
// disk, not the file the link named when the old process started.
func TestAnUpgradeFollowsTheLinkTheServerWasStartedThrough(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the new process's executable is read from /proc")
	}
	dir := t.TempDir()
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, v := range []string{"v1", "v2"} {
		versions[v] = filepath.Join(dir, v, "helper.test")
		if err := os.MkdirAll(filepath.Dir(versions[v]), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(versions[v], data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "bin", "helper.test")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(versions["v1"], link); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "run", "helper.pid")
	ps := tcpserver.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd := exec.Command(link, "-test.run=^TestHandoffHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+pidFile, helperAddr+"="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid, err := ReadPID(pidFile); err == nil && pid != cmd.Process.Pid {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == cmd.Process.Pid })

	// the new version is installed: the link is switched atomically, as an installer does
	next := link + ".new"
	if err := os.Symlink(versions["v2"], next); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, link); err != nil {
		t.Fatal(err)
	}
	out, err := Request{PIDFile: pidFile, Timeout: 20 * time.Second}.Do(context.Background())
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(out.NewPID) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if exe != versions["v2"] {
		t.Fatalf("after the link %s was switched to %s, the upgrade started %s: the version the server started with, not the one installed",
			link, versions["v2"], exe)
	}
}

// waitingClock is the wall clock that closes polling the first time it is asked to wait
// pollEvery: a Request has read the record it compares against and sent its SIGHUP.
type waitingClock struct {
	clock.Real
	once    sync.Once
	polling chan struct{}
}

func (c *waitingClock) After(d time.Duration) <-chan time.Time {
	if d == pollEvery {
		c.once.Do(func() { close(c.polling) })
	}
	return c.Real.After(d)
}

// Two upgrades asked for at once (two `systemctl reload`s, a deploy and an operator): the second
// asks while the first one's new process is starting, so the server has one attempt for both.
// Once it succeeds, both requests say so and name the new process; the second is not left
// waiting for an attempt of its own that never comes, then told the server exited without an
// outcome.
func TestASecondRequestDuringAnUpgradeGetsItsOutcome(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "run", "helper.pid")
	hold := filepath.Join(dir, "hold")
	ps := tcpserver.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(ps[0])
	cmd, _ := startHelper(t, pidFile, addr, helperHold+"="+hold)
	first := cmd.Process.Pid
	poll.Until(t, 10*time.Second, "the helper serves", func() bool { return whoServes(addr) == first })
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out Outcome
		err error
	}
	do := func(r Request) <-chan result {
		done := make(chan result, 1)
		go func() { out, err := r.Do(context.Background()); done <- result{out, err} }()
		return done
	}
	one := do(Request{PIDFile: pidFile, Timeout: 20 * time.Second})
	poll.Until(t, 10*time.Second, "the first upgrade's new process started, held short of ready", func() bool { return heldPID(hold) != 0 })
	waiting := &waitingClock{polling: make(chan struct{})}
	two := do(Request{PIDFile: pidFile, Timeout: 20 * time.Second, Clock: waiting})
	select {
	case <-waiting.polling:
	case r := <-two:
		t.Fatalf("the second request ended before the first upgrade did: %+v %v", r.out, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the second request never signalled")
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	for i, done := range []<-chan result{one, two} {
		select {
		case r := <-done:
			if r.err != nil || r.out.OldPID != first || r.out.NewPID != heldPID(hold) {
				t.Errorf("request %d: %+v %v; want the upgrade from %d to %d", i+1, r.out, r.err, first, heldPID(hold))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("request %d: no outcome", i+1)
		}
	}
}
