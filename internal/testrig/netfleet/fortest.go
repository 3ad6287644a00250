//go:build linux

package netfleet

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

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
	if left, margin := timeLeft(t); left < margin {
		t.Fatalf("netfleet: %s left before the test binary's -timeout: too little to build a fleet and use it "+
			"(testmain already stops what the tests started then; give -timeout more)", left.Round(time.Second))
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

// timeLeft is the time left before t's test binary times out, and the least a new fleet needs:
// testmain's sweep before the timeout (min(30s, timeout/10)) plus 10s to build and use it.
// Without a deadline, it is a day.
func timeLeft(t testing.TB) (left, margin time.Duration) {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return 24 * time.Hour, 0
	}
	deadline, set := d.Deadline()
	if !set {
		return 24 * time.Hour, 0
	}
	timeout := 10 * time.Minute
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			timeout, _ = g.Get().(time.Duration)
		}
	}
	return time.Until(deadline), min(30*time.Second, timeout/10) + 10*time.Second
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
