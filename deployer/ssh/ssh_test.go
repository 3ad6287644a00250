package ssh

import (
	"strings"
	"testing"
)

func TestSSHTargetsAndRefusals(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{
		"root@127.0.0.1:2222": {"root@127.0.0.1", "2222"},
		"deploy@web-1":        {"deploy@web-1", ""},
		"web-1":               {"web-1", ""},
		"u@[::1]:22":          {"u@::1", "22"},
	} {
		dest, port, err := Target(in)
		if err != nil || dest != want[0] || port != want[1] {
			t.Errorf("Target(%q) = %q %q %v, want %q %q", in, dest, port, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"-oProxyCommand=x", "a b@c", "u@h:port", ""} {
		if _, _, err := Target(bad); err == nil {
			t.Errorf("Target(%q): no error", bad)
		}
	}
	if got := ShellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("ShellQuote: %s", got)
	}
}

// What a host prints is read in bounded lines: a line over the limit is replaced by a note of
// its size, never held whole; the lines around it come through intact.
func TestARemoteLineOverTheLimitIsDropped(t *testing.T) {
	in := "first\r\n" + strings.Repeat("x", 300_000) + "\n" + strings.Repeat("y", 1000) + "\nlast"
	var got []string
	ReadLines(strings.NewReader(in), 100_000, func(b []byte) { got = append(got, string(b)) })
	want := []string{"first", "(a line of 300001 bytes, over the 100000-byte limit, dropped)", strings.Repeat("y", 1000), "last"}
	if len(got) != len(want) {
		t.Fatalf("lines %q, want %d lines", got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %.80q, want %.80q", i, got[i], want[i])
		}
	}
}
