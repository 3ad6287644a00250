package http1

import (
	"errors"
	"testing"
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

// smuggling are the RFC 9112 §6.3 cases a proxy must refuse, each with the status it is answered
// with (0: accepted). This is the one table of them: the LB's own test (infra/lb, parser_test.go)
// covers only what the LB adds, one refusal of each kind sent over the wire.
var smuggling = []struct {
	name, head string
	status     int
}{
	{"plain GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0},
	{"POST with a body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", 0},
	{"Transfer-Encoding chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 0},
	{"Transfer-Encoding Chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n", 0},
	{"unknown coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
	{"stacked codings", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400},
	{"chunked twice in one line", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400},
	{"repeated Transfer-Encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{"Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{"chunked with a trailing comma", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked,\r\n\r\n", 400},
	{"TE and CL together", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{"CL and TE together", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400},
	{"conflicting CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
	{"repeated equal CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", 400},
	{"CL list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\n", 400},
	{"signed CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n", 400},
	{"negative CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
	{"non-numeric CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", 400},
	{"obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  folded\r\n\r\n", 400},
	{"space before colon", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\n", 400},
	{"bare LF", "GET / HTTP/1.1\nHost: x\n\n", 400},
	{"bare LF inside", "GET / HTTP/1.1\r\nHost: x\nX: y\r\n\r\n", 400},
	{"no Host in HTTP/1.1", "GET / HTTP/1.1\r\nX: y\r\n\r\n", 400},
	{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
	{"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", 0},
	{"HTTP/2 on the wire", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
	{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400},
	{"control char in value", "GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", 400},
	{"no colon", "GET / HTTP/1.1\r\nHost: x\r\nJustText\r\n\r\n", 400},
	{"space in target", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400},
}

func TestParserRefusesSmuggling(t *testing.T) {
	for _, tc := range smuggling {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseStatus(tc.head); got != tc.status {
				t.Fatalf("%q: got %d, want %d", tc.head, got, tc.status)
			}
		})
	}
}

// FuzzParseRequest: the parser never panics, never reads past the head, and a request it
// accepts, written back in canonical form, parses to the same request.
func FuzzParseRequest(f *testing.F) {
	for _, tc := range smuggling {
		f.Add([]byte(tc.head))
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
		up := AppendUpstreamHead(nil, &r, []byte("127.0.0.1"), "b:1")
		var fwd Request
		if err := ParseRequest(up, &fwd); err != nil {
			t.Fatalf("the head for the backend %q (from %q) does not parse: %v", up, data[:n], err)
		}
		if fwd.ContentLength != r.ContentLength || string(fwd.Method()) != string(r.Method()) || string(fwd.Target()) != string(r.Target()) {
			t.Fatalf("the backend would read another request: %q (body %d) from %q (body %d)", up, fwd.ContentLength, data[:n], r.ContentLength)
		}
	})
}
