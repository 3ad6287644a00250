// Command mutate is the mutation harness of package invariants: it proves that every invariant
// test bites. It first runs the unmutated tests (they must pass), then
//
//   - config mutants: every timing number of every shipped config (examples/*.yaml) that takes
//     part in an invariant is set, in a temporary copy, to the invariant's boundary and to a
//     typical wrong value (drain.window 5s against 5s × 2, the source's bug), and a duration in
//     a product or sum that breaks the invariant as it grows to the largest duration, where the
//     arithmetic overflows (balancer.interval 2562047h47m16.854s × 2 must not wrap around to a
//     negative detection); the prebuilt test binary runs on the copy through
//     ZERO502_INVARIANT_CONFIGS;
//   - code mutants: every relational operator in the relationIn functions of package invariants
//     gets its boundary shifted (> → >=, < → <=, and back) and its operands swapped; each runs
//     with go test -overlay, so the working tree is never written.
//
// A mutant is killed only when the test named for its invariant (TestIn…) fails; one that does
// not compile or load is not viable and not counted. It prints every mutant, who killed it and
// the mutation score, and exits 1 below 100 % (2 when the harness itself cannot run).
//
// Usage, from the module root: go run ./invariants/mutate
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/stopsignal"
)

const (
	modulePath = "github.com/zero502/zero502"
	invPkg     = modulePath + "/invariants"
	exPkg      = modulePath + "/examples"
	configsEnv = "ZERO502_INVARIANT_CONFIGS"
)

func main() {
	parallel := flag.Int("parallel", 2, "mutants run at once")
	flag.Parse()
	ctx, stop := stopsignal.Context(context.Background())
	defer stop()
	code, err := run(ctx, os.Stdout, *parallel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, w io.Writer, parallel int) (int, error) {
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(w, "[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	root, err := goCmd(ctx, ".", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return 2, fmt.Errorf("run from inside the zero502 module: %w", err)
	}
	dirs, err := goCmd(ctx, root, "list", "-f", "{{.Dir}}", invPkg, exPkg)
	if err != nil {
		return 2, err
	}
	d := strings.Split(dirs, "\n")
	if len(d) != 2 {
		return 2, fmt.Errorf("go list: want the dirs of %s and %s, got %q", invPkg, exPkg, dirs)
	}
	pkgDir, examplesDir := d[0], d[1]
	tmp, err := os.MkdirTemp("", "zero502-mutate-")
	if err != nil {
		return 2, err
	}
	defer os.RemoveAll(tmp)

	testBin := filepath.Join(tmp, "invariants.test")
	if _, err := goCmd(ctx, root, "test", "-c", "-o", testBin, invPkg); err != nil {
		return 2, err
	}
	step("built the invariants test binary")
	if err := unmutated(ctx, testBin, examplesDir, tmp); err != nil {
		return 2, err
	}
	step("unmutated tests pass (shipped configs, and copies of them through %s)", configsEnv)

	cfgMutants, unused, err := configMutants(examplesDir, tmp)
	if err != nil {
		return 2, err
	}
	codeMuts, err := codeMutants(pkgDir, tmp)
	if err != nil {
		return 2, err
	}
	if len(codeMuts) == 0 {
		return 2, fmt.Errorf("no relational operator found in the relationIn functions of %s", pkgDir)
	}
	step("%d config mutants, %d code mutants; running %d at a time", len(cfgMutants), len(codeMuts), parallel)
	runAll(ctx, codeMuts, parallel, func(ctx context.Context, m *mutant) { runCodeMutant(ctx, root, invPkg, m) })
	step("code mutants done")
	runAll(ctx, cfgMutants, parallel, func(ctx context.Context, m *mutant) { runConfigMutant(ctx, testBin, m) })
	step("config mutants done")
	if ctx.Err() != nil {
		return 2, ctx.Err()
	}

	score := report(w, append(codeMuts, cfgMutants...), unused)
	fmt.Fprintf(w, "took %.1fs\n", time.Since(start).Seconds())
	if score < 1 {
		return 1, fmt.Errorf("mutation score %.1f %% is below 100 %%: a surviving mutant is a change no invariant test notices", score*100)
	}
	return 0, nil
}

// unmutated runs the tests as shipped, then on plain copies of the shipped configs through the
// environment variable, so that a config mutant can only fail because of its change.
func unmutated(ctx context.Context, testBin, examplesDir, tmp string) error {
	out, err := runTests(ctx, testBin, nil)
	if err != nil {
		return fmt.Errorf("the unmutated invariant tests fail; fix them before mutating:\n%s", out)
	}
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		return err
	}
	var copies []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		c := filepath.Join(tmp, "unmutated-"+filepath.Base(f))
		if err := os.WriteFile(c, data, 0o644); err != nil {
			return err
		}
		copies = append(copies, c)
	}
	out, err = runTests(ctx, testBin, []string{configsEnv + "=" + strings.Join(copies, ",")})
	if err != nil {
		return fmt.Errorf("the invariant tests fail on unmodified copies of the shipped configs:\n%s", out)
	}
	return nil
}

// report prints every mutant grouped by invariant, the numbers in no invariant and the score
// (killed / (killed + survived)).
func report(w io.Writer, mutants []*mutant, unused []string) float64 {
	byInv := map[string][]*mutant{}
	for _, m := range mutants {
		byInv[m.invariant] = append(byInv[m.invariant], m)
	}
	var nKilled, nSurvived, nNotViable, nTimedOut int
	for _, id := range invariantIDs() {
		ms := byInv[id]
		k := 0
		for _, m := range ms {
			if m.result == killed {
				k++
			}
		}
		fmt.Fprintf(w, "\n%s: %d mutants, %d killed\n", id, len(ms), k)
		for _, m := range ms {
			line := fmt.Sprintf("  %-10s %-6s %s", m.result, m.kind, m.label)
			switch m.result {
			case killed:
				nKilled++
				line += "  by " + m.killer
				if others := without(m.failed, m.killer); len(others) > 0 {
					line += " (also failed: " + strings.Join(others, ", ") + ")"
				}
			case survived:
				nSurvived++
				line += ": " + m.detail
				if len(m.failed) > 0 {
					line += " (" + strings.Join(m.failed, ", ") + ")"
				}
			case notViable:
				nNotViable++
				line += ": " + m.detail
			case timedOut:
				nTimedOut++
				line += ": " + m.detail
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(unused) > 0 {
		fmt.Fprintf(w, "\nnumbers in no invariant that applies to their config (listed, not counted):\n")
		for _, u := range unused {
			fmt.Fprintln(w, "  "+u)
		}
	}
	counted := nKilled + nSurvived + nTimedOut
	score := 0.0
	if counted > 0 {
		score = float64(nKilled) / float64(counted)
	}
	fmt.Fprintf(w, "\nmutation score: %d/%d killed (%.1f %%), %d survived, %d timed out, %d not viable (not counted)\n",
		nKilled, counted, score*100, nSurvived, nTimedOut, nNotViable)
	return score
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
