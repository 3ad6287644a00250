package http1

import (
	"strconv"
	"strings"
	"testing"
)

// responseSeeds are backend response heads (and bodies), valid and broken, for FuzzParseResponse.
var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nbody until close",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
	"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nConnection: close, X-A\r\nX-A: 1\r\n\r\n",
	// framing headers named in Connection must keep framing the message
	"HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	// broken
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
	"HTTP/1.1 2000 OK\r\n\r\n",
	"HTTP/1.1 099 OK\r\n\r\n",
	"HTTP/2.0 200 OK\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r0\r\n\r\n", // a bare CR in the size line
	"\x00\x01garbage\r\n\r\n",
	"HTTP/1.1 200 OK\rSet-Cookie: injected=1\x00\r\nContent-Length: 2\r\n\r\nok", // a bare CR and a NUL in the reason
	"HTTP/1.1 103 Early\x01Hints\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 zz\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nGET /smuggled HTTP/1.1\r\n\r\n",
}

// ParseResponse refuses a reason phrase with control characters (RFC 9112 §4) and chunked
// applied more than once (RFC 9112 §6.1), and closes the connection after an HTTP/1.0 response
// with Transfer-Encoding (§6.1: its framing is faulty, whatever its Connection header says).
func TestParseResponseRules(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		ok, keep   bool // accepted; KeepAlive
	}{
		{"reason with HTAB and obs-text", "HTTP/1.1 200 O\tK \xe9\r\nContent-Length: 0\r\n\r\n", true, true},
		{"empty reason", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", true, true},
		{"bare CR in the reason", "HTTP/1.1 200 OK\rSet-Cookie: injected=1\r\nContent-Length: 0\r\n\r\n", false, false},
		{"NUL in the reason", "HTTP/1.1 200 OK\x00\r\nContent-Length: 0\r\n\r\n", false, false},
		{"DEL in the reason", "HTTP/1.1 200 OK\x7f\r\nContent-Length: 0\r\n\r\n", false, false},
		{"control character in an interim reason", "HTTP/1.1 103 Early\x1bHints\r\n\r\n", false, false},
		{"chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", false, false},
		{"chunked twice in one line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", false, false},
		{"chunked twice around gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n", false, false},
		{"gzip then chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", true, true},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", true, true},
		{"HTTP/1.0 keep-alive with chunked", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n", true, false},
		{"HTTP/1.0 keep-alive with Transfer-Encoding on a 204", "HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n", true, false},
	} {
		var r Response
		err := ParseResponse([]byte(tc.head), false, &r)
		if (err == nil) != tc.ok || err == nil && r.KeepAlive != tc.keep {
			t.Errorf("%s: %q: error %v, keep-alive %v; want accepted %v, keep-alive %v", tc.name, tc.head, err, r.KeepAlive, tc.ok, tc.keep)
		}
	}
}

// FuzzParseResponse: the response parser and the chunked framing never panic; a response it
// accepts keeps its framing when the LB writes the head to the client (the client must find the
// body's end where the LB does), and a chunked body ends where the chunk sizes say.
func FuzzParseResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(responseSeeds[0]), true)
	f.Fuzz(func(t *testing.T, data []byte, reqHead bool) {
		n, err := HeadEnd(data)
		if err != nil || n < 0 {
			return
		}
		var r Response
		if err := ParseResponse(data[:n], reqHead, &r); err != nil {
			return
		}
		if r.Status < 100 || r.Status > 599 {
			t.Fatalf("status %d accepted from %q", r.Status, data[:n])
		}
		if r.Framing == ContentLength && r.ContentLength < 0 {
			t.Fatalf("Content-Length framing with length %d from %q", r.ContentLength, data[:n])
		}
		if r.Framing == UntilClose && r.KeepAlive {
			t.Fatalf("a close-delimited body on a kept-alive connection from %q", data[:n])
		}
		out := AppendClientHead(nil, &r, false, false)
		for _, c := range out[:strings.Index(string(out), "\r\n")] {
			if c < 0x20 && c != '\t' || c == 0x7f {
				t.Fatalf("the status line for the client %q (from %q) holds a control character", out, data[:n])
			}
		}
		var again Response
		if err := ParseResponse(out, reqHead, &again); err != nil {
			t.Fatalf("the head for the client %q (from %q) does not parse: %v", out, data[:n], err)
		}
		if again.Status != r.Status || again.Framing != r.Framing ||
			r.Framing == ContentLength && again.ContentLength != r.ContentLength {
			t.Fatalf("the client would frame the body differently: LB %d %v %d, client %d %v %d\nbackend %q\nclient  %q",
				r.Status, r.Framing, r.ContentLength, again.Status, again.Framing, again.ContentLength, data[:n], out)
		}
		if r.Framing == Chunked {
			walkChunked(t, data[n:])
		}
	})
}

// walkChunked runs the chunked framing (the one both paths relay responses with) over body
// whole and byte by byte: both find the same end, and every size line it accepts holds the
// size strconv reads from its hex digits.
func walkChunked(t *testing.T, body []byte) {
	n1, done1, broken1 := scanAll(body, len(body)+1)
	n2, done2, broken2 := scanAll(body, 1)
	if done1 != done2 || broken1 != broken2 || (!broken1 && n1 != n2) {
		t.Fatalf("chunked body %q: whole %d %v %v, byte by byte %d %v %v", body, n1, done1, broken1, n2, done2, broken2)
	}
	checkSizeLine(t, body)
}

// checkSizeLine checks the first line of body, when the framer takes it whole as a chunk size
// line, against strconv's reading of its hex digits.
func checkSizeLine(t *testing.T, body []byte) {
	i := strings.Index(string(body), "\r\n")
	if i < 0 {
		return
	}
	var f ChunkFramer
	if n, err := f.Frame(body[:i+2]); err != nil || n != i+2 {
		return
	}
	digits := string(body[:i])
	if k := strings.IndexAny(digits, "; \t"); k >= 0 {
		digits = digits[:k]
	}
	want, err := strconv.ParseInt(digits, 16, 64)
	if err != nil || want < 0 {
		t.Fatalf("chunk size line %q accepted, but its size %q is not a hex number: %v", body[:i+2], digits, err)
	}
	if got := f.DataLeft(); got != want {
		t.Fatalf("chunk size line %q read as %d, want %d", body[:i+2], got, want)
	}
}
