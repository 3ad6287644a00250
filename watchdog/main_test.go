package watchdog_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/testmain"
	"github.com/zero502/zero502/watchdog"
)

// The process-runtime tests run this test binary itself as the service, chosen by its first
// argument (read before any test flag): "serve-for-watchdog-test ADDR VERSION" serves GET /health
// (200) and GET / ("version V") on ADDR; "work-for-watchdog-test" just runs. Both exit 0 on
// SIGTERM. "deploy-for-watchdog-test CONFIG VERSION" is a deployer on the docker runtime in a
// process of its own (so a test can SIGKILL it), its events as JSON lines on stdout. A child that
// is given neither never runs the tests: fuseEnv stops a fork bomb (services get it through their
// configured env: a runtime passes nothing else of this process's environment).
const fuseEnv = "ZERO502_WATCHDOG_TEST_PARENT_PID"

func TestMain(m *testing.M) {
	if len(os.Args) >= 4 && os.Args[1] == "serve-for-watchdog-test" {
		serve(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "work-for-watchdog-test" {
		waitForSignal()
		return
	}
	if len(os.Args) >= 4 && os.Args[1] == "deploy-for-watchdog-test" {
		os.Exit(deployForTest(os.Args[2], os.Args[3]))
	}
	if parent := os.Getenv(fuseEnv); parent != "" {
		fmt.Fprintf(os.Stderr, "watchdog test binary started by pid %s without a service mode: refusing to run the tests again\n", parent)
		os.Exit(3)
	}
	os.Setenv(fuseEnv, fmt.Sprint(os.Getpid()))
	os.Exit(dockertest.Main(m, testmain.Options{}))
}

func waitForSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}

func serve(addr, version string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "version %s\n", version) })
	go http.Serve(l, mux)
	waitForSignal()
}

// fixture is one host with a published spec, its runtime, and a watchdog over it.
type fixture struct {
	t    *testing.T
	cfg  *config.Config
	host config.Host
	dir  string
	rt   watchdog.Runtime
	clk  *clock.Fake
	logs *syncbuffer.Buffer
	w    *watchdog.Watchdog
}

// processConfig is a process-runtime config of one host running web (a port) and worker (none).
func processConfig(t *testing.T, dir string, webPort int) *config.Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {interval: 1s, heal_after: 4, check_timeout: 500ms, state_dir: %[1]s}
drain: {window: 1500ms, shutdown: 1s, stop_grace: 4s, max_recovery: 2s}
services:
  - name: web
    command: [%[2]q, serve-for-watchdog-test, "127.0.0.1:{port}", "{version}"]
    port: %[3]d
    env: {%[4]s: "%[5]d"}
  - name: worker
    command: [%[2]q, work-for-watchdog-test]
    env: {%[4]s: "%[5]d"}
hosts:
  - {name: h1, address: 127.0.0.1, state_dir: %[1]s}
`, dir, self, webPort, fuseEnv, os.Getpid())
	cfg, err := config.LoadBytes([]byte(yaml), "test config")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newFixture builds the watchdog of cfg's only host over rt, with a fake clock and the log
// captured.
func newFixture(t *testing.T, cfg *config.Config, rt watchdog.Runtime) *fixture {
	t.Helper()
	f := &fixture{t: t, cfg: cfg, host: cfg.Hosts[0], dir: cfg.HostStateDir(cfg.Hosts[0]), rt: rt,
		clk: clock.NewFake(time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)), logs: &syncbuffer.Buffer{}}
	w, err := watchdog.New(cfg, f.host, watchdog.Options{Runtime: rt, Clock: f.clk,
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	t.Cleanup(f.stopAll)
	return f
}

// deploy does what the deployer does on a fresh host: publish the spec at version, start every
// service, wait until each answers.
func (f *fixture) deploy(version string) spec.Spec {
	f.t.Helper()
	s := spec.Render(f.cfg, f.host, version, "")
	if err := spec.Publish(spec.Path(f.dir), s); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, svc := range s.Services {
		if svc.Stopped {
			continue
		}
		if _, err := f.rt.Start(ctx, f.host.Name, svc); err != nil {
			f.t.Fatalf("start %s: %v", svc.Name, err)
		}
		if svc.Address != "" {
			waitVersion(f.t, svc.Address, version)
		}
	}
	return s
}

// tick runs one tick and fails the test on an error.
func (f *fixture) tick() watchdog.Report {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := f.w.Tick(ctx)
	if err != nil {
		f.t.Fatalf("tick: %v", err)
	}
	f.clk.Advance(f.cfg.Watchdog.Interval)
	return rep
}

// kill SIGKILLs every running instance of service, as a crash would.
func (f *fixture) kill(service string) {
	f.t.Helper()
	ctx := context.Background()
	insts, err := f.rt.List(ctx, runtime.Filter{Host: f.host.Name, Service: service})
	if err != nil {
		f.t.Fatal(err)
	}
	killed := 0
	for _, in := range insts {
		if in.Running() {
			if _, err := f.rt.Stop(ctx, in, 0); err != nil {
				f.t.Fatalf("kill %s: %v", in.ID, err)
			}
			killed++
		}
	}
	if killed == 0 {
		f.t.Fatalf("no running instance of %s to kill", service)
	}
}

// running returns the running instances of service.
func (f *fixture) running(service string) []runtime.Instance {
	f.t.Helper()
	insts, err := f.rt.List(context.Background(), runtime.Filter{Host: f.host.Name, Service: service})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []runtime.Instance
	for _, in := range insts {
		if in.Running() {
			out = append(out, in)
		}
	}
	return out
}

func (f *fixture) stopAll() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, svc := range f.cfg.Services { // service by service: a corrupt record leaks no other one
		insts, _ := f.rt.List(ctx, runtime.Filter{Host: f.host.Name, Service: svc.Name})
		for _, in := range insts {
			if in.Running() {
				f.rt.Stop(ctx, in, 0)
			}
			f.rt.Remove(ctx, in)
		}
	}
}

// verdict returns the verdict of service in rep.
func verdict(t *testing.T, rep watchdog.Report, service string) watchdog.Verdict {
	t.Helper()
	for _, v := range rep.Services {
		if v.Service == service {
			return v
		}
	}
	t.Fatalf("report %+v has no verdict for %s", rep, service)
	return watchdog.Verdict{}
}

// waitVersion polls addr until GET / says version.
func waitVersion(t *testing.T, addr, version string) {
	t.Helper()
	poll.UntilNil(t, 30*time.Second, addr+" never answered version "+version, func() error {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			return fmt.Errorf("last: %w", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "version "+version) {
			return fmt.Errorf("last: %s", b)
		}
		return nil
	})
}

// holdWithFlock holds the host lock with flock(1), as a server bootstrap script would, until
// the returned function is called.
func holdWithFlock(t *testing.T, lockPath string) (release func()) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) is not installed (util-linux)")
	}
	// -o: the lock belongs to flock itself, not to sleep, so killing the group frees it.
	cmd := exec.Command("flock", "-o", lockPath, "sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		// flock(1)'s child may still hold a copy of the locked descriptor for a moment (until it
		// closes it, -o, or its SIGKILL is processed): the lock is free once a taker gets it.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if l, err := hostlock.TryAcquire(lockPath, hostlock.Holder{Who: "probe"}); err == nil {
				l.Release()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("the lock %s was still held 10s after flock(1) was killed", lockPath)
	}
	t.Cleanup(release)
	poll.Until(t, 10*time.Second, "flock(1) never took the lock", func() bool {
		l, err := hostlock.TryAcquire(lockPath, hostlock.Holder{Who: "probe"})
		if err != nil {
			return true
		}
		l.Release()
		return false
	})
	return release
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func statePath(f *fixture) string   { return filepath.Join(f.dir, watchdog.StateFile) }
func metricsPath(f *fixture) string { return filepath.Join(f.dir, watchdog.MetricsFile) }
