package main

import (
	"strings"
	"testing"
)

// --wait must be positive: with none, the decision would be recorded for the paused deploy to
// act on, and the command would still report it as not taken. Refused before the config is read.
func TestDecideRefusesAWaitThatIsNotPositive(t *testing.T) {
	for _, wait := range []string{"0s", "-1s"} {
		for _, decision := range []string{"promote", "abort"} {
			out, code := runCLI(t, "deploy", decision, "--config", "/nonexistent/zero502.yaml", "--wait", wait)
			if code != 2 || !strings.Contains(out, "--wait "+wait+": must be a positive duration") {
				t.Errorf("deploy %s --wait %s: exit %d, %q; want 2 naming --wait and the rule", decision, wait, code, out)
			}
		}
	}
}
