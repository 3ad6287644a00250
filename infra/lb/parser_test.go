package lb

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/smuggling"
)

// TestSmugglingIsRefusedOverTheWireAndTheConnectionClosed sends every refused head of the one
// smuggling table (internal/testrig/smuggling; package http1's parser test reads it too) to the
// LB, with a valid request pipelined after it: the refusal's status goes to the client, the
// connection is closed (the valid request is never answered) and nothing reaches the backend.
// CI runs it on both of the LB's paths.
func TestSmugglingIsRefusedOverTheWireAndTheConnectionClosed(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	for _, tc := range smuggling.Cases(t) {
		if tc.Status == 0 {
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			out := raw(t, l.Addr(), tc.Head+"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
			want := "HTTP/1.1 " + strconv.Itoa(tc.Status) + " "
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
