// Package testmain is the tests' one TestMain and their one builder of the zero502 binary: it
// builds it once per test binary (static, so the same build runs as a process and inside a Docker
// image FROM scratch; with the race detector when a suite asks), with any other program of this
// module the suite runs, runs more of the tests at once than GOMAXPROCS when they mostly wait on real timers (unless -parallel was
// given), and runs every cleanup registered with Track or AtExit both when a test ends and shortly
// before the test binary's -timeout fires, so a run that times out leaves no process or container
// behind for the next one.
package testmain

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// Options say what a package's TestMain wants.
type Options struct {
	// Binary, when not nil, is set to the path of the zero502 binary built for this test binary
	// (removed when the tests end). The build is static (CGO_ENABLED=0) unless Race.
	Binary *string
	// Programs are more main packages of this module that the tests run, built beside Binary
	// with the same flags: each package path, relative to the module root
	// ("./infra/lb/testbackend"), points to where Run sets the path of its binary.
	Programs map[string]*string
	// Race builds Binary and Programs with the race detector, which needs cgo: the build is then
	// not static, and StaticBinary stays "" (no Docker image can be made of it).
	Race bool
	// Parallel is the -parallel used when the caller gave none (0: Go's default, GOMAXPROCS).
	Parallel int
	// UnderLoad says the package's tests judge zero failed requests under a steady load through
	// real processes (the deployer's, the demo's, the networked fleet's). Such packages never run their tests beside one
	// another (go test runs packages GOMAXPROCS at a time: on 2 cores the deployer's four deploys
	// under load beside three demos, on a machine already busy, starve 100 ms health checks):
	// Run holds an exclusive flock on LoadLockPath from before the tests start until they end.
	// The binary's own -timeout counts from m.Run, but go test kills a binary that runs past
	// -timeout plus a minute from its start, the wait included: the README's test command gives
	// -timeout 20m, so the third package in line is not killed while it waits on a slow machine.
	UnderLoad bool
	// Again is an environment (NAME=value settings) under which the tests run a second time,
	// in a child of this test binary with the same flags, once the first run ended: the LB's
	// and the edge's tests, once through their event loops and again through their goroutine
	// paths (ZERO502_TEST_LB_ENGINE=goroutines), within the one go test command. A run whose
	// environment has the settings already runs once. The exit code is the worse of the two.
	Again []string
}

// BothEngines is the Options of a package with two engines (the LB's, the edge's): where its
// event loops exist (loops), the tests run through them, then again under env (its engine
// variable set to "goroutines"), every connection through the goroutine path; elsewhere once.
func BothEngines(loops bool, env string) Options {
	if !loops {
		return Options{}
	}
	return Options{Again: []string{env}}
}

// LoadLockPath is the flock the UnderLoad packages take turns on.
func LoadLockPath() string { return filepath.Join(os.TempDir(), "zero502-tests-under-load.lock") }

var (
	mu       sync.Mutex
	cleanups = map[int]func(){} // once each (Track's end of test, AtExit)
	raw      = map[int]func(){} // the same, runnable again (the sweep before the timeout)
	next     int
	binary   string
)

// StartedAsProgram reports whether this test binary was started as a program by the code under
// test (os.Executable() run with a command's arguments, "lb --config …") rather than by go test,
// whose arguments are all -test. flags. Such a start must not run the tests again: each would
// start the program again, without end.
func StartedAsProgram() bool {
	return len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.")
}

// Run parses the test flags, builds the binary when asked, arms the cleanup before the timeout,
// runs the tests and the remaining cleanups, and returns the exit code for os.Exit. A test binary
// started as a program (StartedAsProgram) runs nothing and exits 2, saying so.
func Run(m *testing.M, o Options) int {
	if StartedAsProgram() {
		fmt.Fprintf(os.Stderr, "testmain: %s is a test binary, started as a program (%q): the code under test ran "+
			"os.Executable(); give it the zero502 binary instead (Options.Binary)\n", os.Args[0], strings.Join(os.Args[1:], " "))
		return 2
	}
	flag.Parse()
	if o.Parallel > 0 && !given("test.parallel") {
		_ = flag.Set("test.parallel", fmt.Sprint(o.Parallel))
	}
	if o.Binary != nil || len(o.Programs) > 0 {
		dir, err := os.MkdirTemp("", "zero502-test-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "testmain:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		builds := map[string]*string{}
		for pkg, out := range o.Programs {
			builds[pkg] = out
		}
		if o.Binary != nil {
			builds["./cmd/zero502"] = o.Binary
		}
		for pkg, out := range builds {
			path := filepath.Join(dir, filepath.Base(pkg))
			if err := build(path, pkg, o.Race); err != nil {
				fmt.Fprintln(os.Stderr, "testmain:", err)
				return 1
			}
			*out = path
		}
		if o.Binary != nil && !o.Race {
			mu.Lock()
			binary = *o.Binary
			mu.Unlock()
		}
	}
	if o.UnderLoad {
		release, err := takeTurn(LoadLockPath())
		if err != nil {
			fmt.Fprintln(os.Stderr, "testmain:", err)
			return 1
		}
		defer release()
		favour() // its turn: its processes come before the rest of the machine's (priority_linux.go)
	}
	stop := armDeadline()
	defer stop()
	code := m.Run()
	runAll("the tests ended")
	if len(o.Again) > 0 && !slices.ContainsFunc(o.Again, func(kv string) bool { return slices.Contains(os.Environ(), kv) }) {
		if again := runAgain(o.Again); again != 0 {
			code = again
		}
	}
	return code
}

// runAgain runs this test binary again with the same flags under env added to the
// environment, and returns its exit code. The go command's test log (-test.testlogfile, what
// it caches results on) stays the first run's own.
func runAgain(env []string) int {
	args := slices.DeleteFunc(slices.Clone(os.Args[1:]), func(a string) bool {
		return strings.HasPrefix(strings.TrimLeft(a, "-"), "test.testlogfile")
	})
	fmt.Printf("testmain: the tests again, under %s\n", strings.Join(env, " "))
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testmain: the tests again:", err)
		return 1
	}
	return 0
}

// StaticBinary is the static zero502 binary Run built ("" when the package's TestMain asked for
// none, or for a race build).
func StaticBinary() string {
	mu.Lock()
	defer mu.Unlock()
	return binary
}

// AtExit registers fn to run when the tests end, or before the timeout (then again every half
// second until the binary ends): fn must be safe to run more than once.
func AtExit(fn func()) {
	register(fn)
}

// Track registers fn to run when t ends (t.Cleanup), or, should the test still run then, before
// the test binary's timeout and again every half second until the binary ends: fn must be safe
// to run more than once.
func Track(t testing.TB, fn func()) {
	id := register(fn)
	t.Cleanup(func() { take(id)() })
}

func register(fn func()) int {
	mu.Lock()
	defer mu.Unlock()
	next++
	var once sync.Once
	cleanups[next] = func() { once.Do(fn) }
	raw[next] = fn
	return next
}

// take removes the cleanup id and returns it (a no-op when it ran already).
func take(id int) func() {
	mu.Lock()
	defer mu.Unlock()
	fn, ok := cleanups[id]
	if !ok {
		return func() {}
	}
	delete(cleanups, id)
	delete(raw, id)
	return fn
}

// runAll runs every registered cleanup, the newest first (as t.Cleanup does).
func runAll(why string) {
	mu.Lock()
	ids := make([]int, 0, len(cleanups))
	for id := range cleanups {
		ids = append(ids, id)
	}
	mu.Unlock()
	if len(ids) > 0 && why != "the tests ended" {
		fmt.Fprintf(os.Stderr, "testmain: %s: stopping the %d processes and containers the running tests started\n", why, len(ids))
	}
	slices.Sort(ids)
	for _, id := range slices.Backward(ids) {
		take(id)()
	}
}

// sweep runs every registered cleanup without forgetting it (each is safe to run again), the
// newest first; why, when not empty, is said first.
func sweep(why string) {
	mu.Lock()
	ids := make([]int, 0, len(cleanups))
	for id := range cleanups {
		ids = append(ids, id)
	}
	fns := make([]func(), 0, len(ids))
	slices.Sort(ids)
	for _, id := range slices.Backward(ids) {
		fns = append(fns, raw[id])
	}
	mu.Unlock()
	if why != "" && len(fns) > 0 {
		fmt.Fprintf(os.Stderr, "testmain: %s: stopping the processes and containers of the %d running cleanups, again every 0.5s until the end\n", why, len(fns))
	}
	for _, fn := range fns {
		fn()
	}
}

// armDeadline runs every cleanup a margin before -test.timeout (the tests then fail, as they
// would have, but leave nothing running), and on SIGINT or SIGTERM before exiting.
func armDeadline() (stop func()) {
	timeout := time.Duration(0)
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			timeout, _ = g.Get().(time.Duration)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var fire <-chan time.Time
	if timeout > 0 {
		margin := min(30*time.Second, timeout/10)
		fire = time.After(timeout - margin)
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-fire:
			// The tests still run and may start more (a deploy rolling back restarts what was
			// stopped): stop everything again every half second until the timeout ends the binary.
			say := fmt.Sprintf("the test binary's -timeout %s is near", timeout)
			for {
				sweep(say)
				say = ""
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		case s := <-sig:
			runAll("got " + s.String())
			os.Exit(1)
		}
	}()
	return func() { signal.Stop(sig); cancel() }
}

// given reports whether the flag was set on the command line.
func given(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// build compiles the main package pkg of this module (./cmd/zero502) into path: statically, or
// with the race detector (and cgo, which it needs) when race.
func build(path, pkg string, race bool) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("find the module root (go list -m): %w", err)
	}
	root := string(out[:len(out)-1])
	defer LockBuild()()
	args := []string{"build", "-trimpath", "-o", path}
	env := append(os.Environ(), "CGO_ENABLED=0")
	if race {
		args, env = append(args, "-race"), os.Environ()
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	cmd.Env = env
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w\n%s", pkg, root, err, msg)
	}
	return nil
}

// takeTurn waits for the flock path (LoadLockPath), saying so when another package holds it.
func takeTurn(path string) (release func(), err error) {
	l := flock.New(path)
	ok, err := l.TryLock()
	if err == nil && !ok {
		start := time.Now()
		fmt.Fprintf(os.Stderr, "testmain: another package's tests under load are running; waiting for %s\n", path)
		err = l.Lock()
		fmt.Fprintf(os.Stderr, "testmain: waited %s for the tests under load of another package\n", time.Since(start).Round(time.Second))
	}
	if err != nil {
		return nil, fmt.Errorf("take turns with the other packages under load on %s: %w", path, err)
	}
	return func() { _ = l.Unlock() }, nil
}
