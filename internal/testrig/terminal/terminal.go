// Package terminal gives tests a terminal to run a command on: script(1), which runs it on a
// pseudo-terminal of its own, as an operator's shell would (a deploy run by hand, a passphrase
// prompt). One lookup, one rule for a machine without it.
package terminal

import (
	"os"
	"os/exec"
	"testing"
)

// Script is the path of script(1). Without it the test is skipped, and fails under CI=true,
// where every test must run.
func Script(t testing.TB) string {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		const why = "script(1) is not installed (apt-get install bsdutils): no terminal to run a command on"
		if os.Getenv("CI") == "true" {
			t.Fatal(why + " (CI must run this test)")
		}
		t.Skip(why)
	}
	return script
}
