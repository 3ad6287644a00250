package dockertest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func TestStaleNamesOnlyWhatAGoneTestBinaryMade(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid // exited and reaped: no process has this pid now
	for _, tc := range []struct {
		name  string
		stale bool
	}{
		{owned("t"), false},     // this live test binary's host
		{owned("test-"), false}, // and its image tag
		{fmt.Sprintf("t%dx0123abcd", dead), true},
		{fmt.Sprintf("test-%dx0123abcd", dead), true},
		{"t1x0123abcd", true}, // pid 1 is alive but no test binary: nothing of its can be in use
		{"host-a", false},     // a user's host is never touched
		{"t1234", false},      // not a name the tests make
		{"latest", false},
	} {
		if got := stale(tc.name); got != tc.stale {
			t.Errorf("stale(%q) = %v, want %v (pid %d is this binary)", tc.name, got, tc.stale, os.Getpid())
		}
	}
}
