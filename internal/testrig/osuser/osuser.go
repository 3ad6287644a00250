// Package osuser gives a test a second local user, a real one in this machine's user database:
// a system user without a login shell, created with useradd when missing and left in place (the
// tests of several packages may use it at once). It needs root; without root or useradd the
// test is skipped, and under CI (CI=true) failed, as .ci/run runs as root.
package osuser

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"
)

// Service is the user the tests run services as.
const Service = "zero502-svc"

// Ensure makes sure the system user name exists and returns it.
func Ensure(t testing.TB, name string) *user.User {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "creating a second local user needs root")
	}
	if u, err := user.Lookup(name); err == nil {
		return u
	}
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		skipOrFail(t, "useradd not found (apt-get install passwd)")
	}
	out, err := exec.Command(useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent",
		"--shell", "/usr/sbin/nologin", name).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 9) { // 9: it exists (made beside us)
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("user %s after useradd: %v", name, err)
	}
	return u
}

// UID is u's uid as a number.
func UID(t testing.TB, u *user.User) int {
	t.Helper()
	n, err := strconv.Atoi(u.Uid)
	if err != nil {
		t.Fatalf("user %s: uid %q: %v", u.Username, u.Uid, err)
	}
	return n
}

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// UIDOf is the real uid process pid runs as (/proc/PID/status, Linux).
func UIDOf(t testing.TB, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("/proc/%d/status: %q: %v", pid, line, err)
			}
			return n
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}
