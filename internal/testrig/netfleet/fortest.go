package netfleet

import (
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/internal/testrig/testmain"
)

// ForTest builds a fleet of hosts for test t, removed when t ends, or before the test binary's
// -timeout ends it (testmain.Track; the package's TestMain must be testmain's). It skips the test
// when the machine cannot build one (not root, no ip, iptables or sshd), and fails it instead
// under CI=true, where the machine must. When t fails, the tails of the sshd logs that say
// something went wrong are logged.
func ForTest(t testing.TB, hosts int) *Fleet {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI must run the fleet tests)", err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	var f *Fleet
	t.Cleanup(func() {
		if !t.Failed() || f == nil {
			return
		}
		for _, h := range f.Hosts {
			if log := h.SSHDLog(1500); containsAny(log, "fatal", "error:", "Timeout, client not responding") {
				t.Logf("%s sshd log (tail):\n%s", h.Name, log)
			}
		}
	})
	f, err := Build(Options{Hosts: hosts, Dir: dir, Track: func(close func()) { testmain.Track(t, close) }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
