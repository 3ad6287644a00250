package lb

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// smuggling are requests the LB must refuse (the parser's own table is in package http1).
var smuggling = []struct {
	name, head string
	status     int
}{
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
	{"HTTP/2 on the wire", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
	{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400},
	{"control char in value", "GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", 400},
	{"no colon", "GET / HTTP/1.1\r\nHost: x\r\nJustText\r\n\r\n", 400},
	{"space in target", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400},
}

func TestSmugglingIsRefusedOverTheWireAndTheConnectionClosed(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	for _, tc := range smuggling {
		if tc.status == 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			// a valid request follows: it must never be answered (the connection is closed)
			out := raw(t, l.Addr(), tc.head+"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
			want := "HTTP/1.1 " + itoa(tc.status) + " "
			if !strings.HasPrefix(out, want) || strings.Count(out, "HTTP/1.1") != 1 {
				t.Fatalf("got %q, want one %q and close", out, want)
			}
		})
	}
	if a.hits.Load() != 0 {
		t.Fatalf("a refused request reached the backend %d times", a.hits.Load())
	}
}

func TestGarbageAndHugeHeaders(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	if out := raw(t, l.Addr(), "\x00\x01\x02 garbage garbage", 5*time.Second); !strings.HasPrefix(out, "HTTP/1.1 400 ") {
		t.Fatalf("garbage: %q", out)
	}
	huge := "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 100_000) + "\r\n\r\n"
	if out := raw(t, l.Addr(), huge, 5*time.Second); !strings.HasPrefix(out, "HTTP/1.1 431 ") {
		t.Fatalf("100 KB header: %.80q", out)
	}
	if code, _, _ := get(t, client(), l.url("/")); code != 200 {
		t.Fatalf("the LB must keep serving: %d", code)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A Connection header naming Content-Length must not strip the framing from the request the
// backend gets: its body would be read as the next request (smuggling).
func TestConnectionNamingContentLengthKeepsTheBodyFramed(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()), slowChecks())
	out := raw(t, l.Addr(), "POST /upload HTTP/1.1\r\nHost: x\r\nConnection: content-length, close\r\nContent-Length: 5\r\n\r\n"+string(bigBody[:5]), 5*time.Second)
	if want := uploadAnswer(5); !strings.HasPrefix(out, "HTTP/1.1 200 ") || !strings.HasSuffix(out, want) {
		t.Fatalf("got %q, want 200 and %q", out, want)
	}
}
