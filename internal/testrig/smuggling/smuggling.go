// Package smuggling is the tests' one table of the RFC 9112 §6.3 request heads an HTTP/1.1 proxy
// must refuse (and a few it must accept), each with the status it is answered with. Two tests
// read it: infra/http1 parses every head, and infra/lb sends every one over the wire to the
// LB on both of its paths, so a case added here is checked at both layers.
package smuggling

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

//go:embed cases.txt
var cases string

// Case is one request head and the status the LB answers it with; 0 means it is accepted.
type Case struct {
	Name   string
	Head   string
	Status int
}

// Cases is the table (cases.txt), or the test fails naming the line it could not read.
func Cases(t testing.TB) []Case {
	t.Helper()
	all, err := parse(cases)
	if err != nil {
		t.Fatalf("smuggling: cases.txt: %v", err)
	}
	return all
}

// parse reads the table: one case per line, tab-separated status, name and quoted head; lines
// starting with # are comments.
func parse(text string) ([]Case, error) {
	var all []Case
	for i, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %q: want status, name and head separated by tabs", i+1, line)
		}
		status, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: status %q: %w", i+1, f[0], err)
		}
		head, err := strconv.Unquote(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: head %s: not a Go string literal: %w", i+1, f[2], err)
		}
		all = append(all, Case{Name: f[1], Head: head, Status: status})
	}
	return all, nil
}
