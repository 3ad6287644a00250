package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// outcome is what became of one mutant.
type outcome string

const (
	killed    outcome = "killed"
	survived  outcome = "SURVIVED"
	notViable outcome = "not viable"
	timedOut  outcome = "TIMED OUT"
)

// mutant is one change to the shipped configs or to the invariants code.
type mutant struct {
	invariant string // I1…I16: the invariant whose test must kill it
	kind      string // config or code
	label     string

	configPath string // config mutants: the mutated copy handed to the tests

	srcPath     string // code mutants: the file replaced through the overlay
	mutated     string
	overlayPath string

	result outcome
	killer string   // the invariant's test, when it failed
	failed []string // every top-level test that failed
	detail string
	took   time.Duration
}

// testPattern matches the top-level test named for invariant id (TestI1…, not TestI10…).
func testPattern(id string) string { return "^Test" + id + "([^0-9]|$)" }

var failLine = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)

// judge decides a finished mutant from the test output: killed only when the test named for its
// invariant failed.
func (m *mutant) judge(ctx context.Context, out []byte, runErr error) {
	want := regexp.MustCompile(testPattern(m.invariant))
	for _, f := range failLine.FindAllStringSubmatch(string(out), -1) {
		m.failed = append(m.failed, f[1])
		if want.MatchString(f[1]) {
			m.killer = f[1]
		}
	}
	switch {
	case m.killer != "":
		m.result = killed
	case ctx.Err() != nil:
		m.result, m.detail = timedOut, "the tests did not finish in time (an overloaded machine?); not counted as killed"
	case runErr == nil:
		m.result, m.detail = survived, "every test passed"
	case len(m.failed) > 0:
		m.result, m.detail = survived, "only other tests failed"
	default:
		m.result, m.detail = survived, "the tests failed without naming a test: "+firstLine(strings.TrimSpace(string(out)))
	}
}

// runConfigMutant runs the prebuilt test binary on the mutated config.
func runConfigMutant(ctx context.Context, testBin string, m *mutant) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testBin, "-test.run", "^TestI[0-9]", "-test.count=1")
	cmd.Env = append(os.Environ(), configsEnv+"="+m.configPath)
	out, err := cmd.CombinedOutput()
	m.judge(ctx, out, err)
}

// runCodeMutant runs the invariant's test with the mutated file overlaid on the package.
func runCodeMutant(ctx context.Context, root, pkg string, m *mutant) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// No vet and no symbol tables: the unmutated package is vetted by CI, and linking is most of
	// a mutant's cost.
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-vet=off", "-ldflags=-s -w",
		"-overlay", m.overlayPath, "-run", testPattern(m.invariant), pkg)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if ctx.Err() == nil && err != nil && (bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]"))) {
		m.result, m.detail = notViable, "does not compile: "+firstLine(strings.TrimSpace(string(out)))
		return
	}
	m.judge(ctx, out, err)
}

// runAll runs every mutant not already decided, at most parallel at a time.
func runAll(ctx context.Context, mutants []*mutant, parallel int, run func(context.Context, *mutant)) {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, m := range mutants {
		if m.result != "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			run(ctx, m)
			m.took = time.Since(start)
		}()
	}
	wg.Wait()
}

// goCmd runs a go command in the module root and returns its trimmed output.
func goCmd(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// runTests runs the whole prebuilt test binary with extra environment.
func runTests(ctx context.Context, testBin string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, testBin, "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
