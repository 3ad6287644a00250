package fdlimit

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// open are the descriptor numbers open now.
func open(t testing.TB) map[int]bool {
	t.Helper()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.Readdirnames(-1)
	self := int(d.Fd())
	_ = d.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd != self {
			out[fd] = true
		}
	}
	return out
}

// Lower sets this process's descriptor limit to the lowest that leaves free slots free below it
// (0: the next descriptor fails; those open above the limit stay open), and returns what restores the old one (call it before the test
// ends). Every goroutine of the process is under the new limit: only a test that runs alone (not
// t.Parallel, in a package whose tests are not) may use it.
func Lower(t testing.TB, free int) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	fds := open(t)
	soft := uint64(0)
	for n := 0; n < free; soft++ {
		if !fds[int(soft)] {
			n++
		}
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: soft, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Fatal(err)
		}
	}
}
