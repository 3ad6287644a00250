package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zero502/zero502/invariants"
)

// editedProduction writes a copy of examples/production.yaml with one line replaced.
func editedProduction(t *testing.T, old, new string) string {
	t.Helper()
	return editedExample(t, "production.yaml", old, new)
}

// editedExample writes a copy of the shipped config examples/name with one line replaced.
func editedExample(t *testing.T, name, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s has no %q", name, old)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInvariantsCommandExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		config   func(t *testing.T) string
		code     int
		mentions []string
	}{
		{"shipped production config holds", func(*testing.T) string { return filepath.Join("..", "..", "examples", "production.yaml") }, 0, []string{"I1", "holds"}},
		{"drain 10s violates I1", func(t *testing.T) string { return editedProduction(t, "window: 15s", "window: 10s") }, 1, []string{"I1", "10s", "violated"}},
		{"stop grace at drain + shutdown violates I2", func(t *testing.T) string { return editedProduction(t, "stop_grace: 30s", "stop_grace: 25s") }, 1, []string{"I2", "25s"}},
		{"a warning is said but exits 0", func(t *testing.T) string {
			return editedExample(t, "local.yaml", "expected_rate: 400", "expected_rate: 1")
		}, 0,
			[]string{"I12", "I13", "warned", "the canary would get about 0.2 requests", "raise rollout.canary.duration to at least 6m40s"}},
		{"misspelt key is invalid", func(t *testing.T) string { return editedProduction(t, "drain:", "drian:") }, 2, []string{`"drian"`}},
		{"negative drain is invalid", func(t *testing.T) string { return editedProduction(t, "window: 15s", "window: -3s") }, 2, []string{"drain.window", "-3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, "invariants", "--config", tc.config(t))
			if code != tc.code {
				t.Fatalf("exit %d, want %d; output:\n%s", code, tc.code, out)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(out, m) {
					t.Errorf("output does not mention %q:\n%s", m, out)
				}
			}
		})
	}
}

// zero502 invariants --help names the range of invariants the command evaluates, up to the last.
func TestInvariantsHelpNamesEveryInvariantItChecks(t *testing.T) {
	_, cfg := localConfigIn(t, t.TempDir())
	last := 0
	for _, v := range invariants.Evaluate(cfg) {
		if n, err := strconv.Atoi(strings.TrimPrefix(v.ID, "I")); err == nil && n > last {
			last = n
		}
	}
	if short := newInvariantsCmd().Short; !strings.Contains(short, fmt.Sprintf("(I1–I%d)", last)) {
		t.Errorf("invariants' help %q does not name I1–I%d, the invariants it evaluates", short, last)
	}
}
