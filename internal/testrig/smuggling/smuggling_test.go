package smuggling

import (
	"strings"
	"testing"
)

func TestTheTableReadsWhole(t *testing.T) {
	all := Cases(t)
	if len(all) != strings.Count(cases, "\n")-2 { // every line but the two comment lines
		t.Fatalf("%d cases read from %d lines", len(all), strings.Count(cases, "\n"))
	}
	refused := 0
	for _, c := range all {
		if !strings.HasSuffix(c.Head, "\r\n\r\n") && !strings.HasSuffix(c.Head, "\n\n") {
			t.Errorf("%s: head %q does not end with a blank line", c.Name, c.Head)
		}
		if c.Status != 0 {
			refused++
		}
	}
	if refused < 20 {
		t.Fatalf("only %d refused cases", refused)
	}
}

func TestABrokenLineIsNamed(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"400\tno head", "line 1"},
		{"# c\nfour\tx\t\"GET\"", "line 2: status \"four\""},
		{"400\tx\tGET", "not a Go string literal"},
	} {
		if _, err := parse(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v; want an error with %q", tc.text, err, tc.want)
		}
	}
}
