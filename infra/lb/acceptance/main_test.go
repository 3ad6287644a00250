package acceptance

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binaries are the programs TestMain builds once for every test.
type binaries struct {
	zero502 string // the real zero502 binary
	backend string // infra/lb/testbackend
	// lbMissing is non-empty while `zero502 lb` is still the placeholder stub: every test skips
	// with it as the reason.
	lbMissing string
}

// bins is set by TestMain before any test runs and only read afterwards.
var bins binaries

func TestMain(m *testing.M) {
	flag.Parse()
	// The scenarios mostly wait on real timers (health intervals, the 3 s header timeout, drain
	// windows), not on the CPU: run more of them at once than the default GOMAXPROCS unless the
	// caller chose -parallel.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", "8")
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acceptance:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "zero502-lb-acceptance-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot()
	if err != nil {
		return 0, err
	}
	bins.zero502 = filepath.Join(dir, "zero502")
	bins.backend = filepath.Join(dir, "testbackend")
	builds := map[string]string{"./cmd/zero502": bins.zero502, "./infra/lb/testbackend": bins.backend}
	// ZERO502_BIN=/path/to/zero502 tests that binary instead of building this checkout's.
	if prebuilt := os.Getenv("ZERO502_BIN"); prebuilt != "" {
		bins.zero502 = prebuilt
		delete(builds, "./cmd/zero502")
	}
	for pkg, out := range builds {
		args := []string{"build", "-o", out}
		// ZERO502_ACCEPTANCE_RACE=1 builds the binaries under test with the race detector too.
		if os.Getenv("ZERO502_ACCEPTANCE_RACE") == "1" {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
		}
	}
	bins.lbMissing = probeLB()
	return m.Run(), nil
}

// moduleRoot is the directory of go.mod, so the build works from any package directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the zero502 module (go env GOMOD is %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}

// probeLB says why `zero502 lb` cannot be tested yet ("" when it can): the placeholder stub
// answers "not built yet".
func probeLB() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bins.zero502, "lb", "--help")
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	if strings.Contains(out.String(), "not built yet") {
		return "zero502 lb is still the placeholder stub (cmd/zero502/lb.go): " + strings.TrimSpace(out.String())
	}
	return ""
}

// needLB skips t while the LB command is not built yet.
func needLB(t *testing.T) {
	t.Helper()
	if bins.lbMissing != "" {
		t.Skip(bins.lbMissing)
	}
}
