package http1

import (
	"errors"
	"testing"

	"github.com/zero502/zero502/internal/testrig/smuggling"
)

func parseStatus(head string) int {
	var r Request
	n, err := HeadEnd([]byte(head))
	if err == nil && n < 0 {
		return -1
	}
	if err == nil {
		err = ParseRequest([]byte(head[:n]), &r)
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Status
	}
	if err != nil {
		return -2
	}
	return 0
}

func TestParserRefusesSmuggling(t *testing.T) {
	for _, tc := range smuggling.Cases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			if got := parseStatus(tc.Head); got != tc.Status {
				t.Fatalf("%q: got %d, want %d", tc.Head, got, tc.Status)
			}
		})
	}
}

// FuzzParseRequest: the parser never panics, never reads past the head, and a request it
// accepts, written back in canonical form, parses to the same request.
func FuzzParseRequest(f *testing.F) {
	for _, tc := range smuggling.Cases(f) {
		f.Add([]byte(tc.Head))
	}
	f.Add([]byte("GET /x?y=1 HTTP/1.1\r\nHost: h\r\nConnection: close, X-A\r\nX-A: 1\r\nX-Forwarded-For: 1.2.3.4\r\n\r\n"))
	// a Connection header naming the framing: the body must stay framed for the backend
	f.Add([]byte("POST / HTTP/1.1\r\nHost: h\r\nConnection: content-length, host\r\nContent-Length: 30\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := HeadEnd(data)
		if err != nil || n < 0 {
			_ = CheckPartialRequestLine(data)
			return
		}
		var r Request
		if err := ParseRequest(data[:n], &r); err != nil {
			return
		}
		canon := r.AppendCanonical(nil)
		var again Request
		if err := ParseRequest(canon, &again); err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, data[:n], err)
		}
		if string(again.AppendCanonical(nil)) != string(canon) || again.ContentLength != r.ContentLength || again.Close != r.Close {
			t.Fatalf("round trip changed the request: %q vs %q", canon, again.AppendCanonical(nil))
		}
		up := AppendUpstreamHead(nil, &r, []byte("127.0.0.1"), true, false, "b:1")
		var fwd Request
		if err := ParseRequest(up, &fwd); err != nil {
			t.Fatalf("the head for the backend %q (from %q) does not parse: %v", up, data[:n], err)
		}
		if fwd.ContentLength != r.ContentLength || string(fwd.Method()) != string(r.Method()) || string(fwd.Target()) != string(r.Target()) {
			t.Fatalf("the backend would read another request: %q (body %d) from %q (body %d)", up, fwd.ContentLength, data[:n], r.ContentLength)
		}
	})
}
