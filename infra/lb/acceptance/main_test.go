package acceptance

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/testmain"
)

// binaries are the programs TestMain builds once for every test.
type binaries struct {
	zero502 string // the real zero502 binary
	backend string // infra/lb/testbackend
	// lbMissing is non-empty while `zero502 lb` is still the placeholder stub: every test skips
	// with it as the reason.
	lbMissing string
}

// bins is set by TestMain before any test runs and only read afterwards (lbMissing once, by
// the first needLB).
var bins binaries

// probed makes the first needLB set bins.lbMissing.
var probed sync.Once

func TestMain(m *testing.M) {
	o := testmain.Options{
		// The scenarios mostly wait on real timers (health intervals, the 3 s header timeout, drain
		// windows), not on the CPU: run more of them at once than the default GOMAXPROCS unless the
		// caller chose -parallel.
		Parallel: 8,
		Binary:   &bins.zero502,
		Programs: map[string]*string{"./infra/lb/testbackend": &bins.backend},
		// ZERO502_ACCEPTANCE_RACE=1 builds the binaries under test with the race detector too.
		Race: os.Getenv("ZERO502_ACCEPTANCE_RACE") == "1",
	}
	// ZERO502_BIN=/path/to/zero502 tests that binary instead of building this checkout's.
	if prebuilt := os.Getenv("ZERO502_BIN"); prebuilt != "" {
		bins.zero502, o.Binary = prebuilt, nil
	}
	os.Exit(testmain.Run(m, o))
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

// needLB skips t while the LB command is not built yet; under CI (CI=true) that is a failure:
// the whole suite must not pass by skipping.
func needLB(t *testing.T) {
	t.Helper()
	probed.Do(func() { bins.lbMissing = probeLB() })
	if bins.lbMissing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(bins.lbMissing)
		}
		t.Skip(bins.lbMissing)
	}
}
