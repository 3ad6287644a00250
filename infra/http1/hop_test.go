package http1

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// requestWithFields is a GET head with Host and n-1 more header lines.
func requestWithFields(n int) string {
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "X-F%d: v\r\n", i)
	}
	b.WriteString("\r\n")
	return b.String()
}

// A request may have MaxRequestFields header lines; one more is refused with 431, whatever its
// size in bytes.
func TestRequestFieldCap(t *testing.T) {
	if got := parseStatus(requestWithFields(MaxRequestFields)); got != 0 {
		t.Errorf("%d header lines: status %d, want accepted", MaxRequestFields, got)
	}
	for _, n := range []int{MaxRequestFields + 1, 200} {
		head := requestWithFields(n)
		var r Request
		err := ParseRequest([]byte(head), &r)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Status != 431 || !strings.Contains(pe.Reason, "header fields") {
			t.Errorf("%d header lines (%d bytes): %v, want 431 for too many header fields", n, len(head), err)
		}
	}
	// responses are the backend's: not capped
	var resp Response
	head := "HTTP/1.1 200 OK\r\n" + strings.Repeat("Set-Cookie: a=b\r\n", 200) + "Content-Length: 0\r\n\r\n"
	if err := ParseResponse([]byte(head), false, &resp); err != nil {
		t.Errorf("a response with 201 header lines: %v", err)
	}
}

// The headers a Connection header names are dropped, case-insensitively, every line of each
// name, in both directions, but not the framing and routing ones; a repeated or empty token
// changes nothing.
func TestConnectionNamedHeadersAreDropped(t *testing.T) {
	var r Request
	head := "GET / HTTP/1.1\r\nHost: x\r\nConnection: x-a, , X-B,x-a , content-length, host\r\nconnection: X-C\r\n" +
		"X-A: 1\r\nx-b: 2\r\nX-Keep: 3\r\nx-A: 4\r\nX-C: 5\r\nX-Ab: 6\r\n\r\n"
	if err := ParseRequest([]byte(head), &r); err != nil {
		t.Fatal(err)
	}
	up := string(AppendUpstreamHead(nil, &r, []byte("10.0.0.1"), false, false, "b:1"))
	want := "GET / HTTP/1.1\r\nHost: x\r\nX-Keep: 3\r\nX-Ab: 6\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n"
	if up != want {
		t.Errorf("upstream head:\n%q\nwant\n%q", up, want)
	}
	var resp Response
	rh := "HTTP/1.1 200 OK\r\nConnection: X-A, Content-Length\r\nX-A: 1\r\nContent-Length: 0\r\nX-a: 2\r\nX-B: 3\r\n\r\n"
	if err := ParseResponse([]byte(rh), false, &resp); err != nil {
		t.Fatal(err)
	}
	if got, want := string(AppendClientHead(nil, &resp, false, false)), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-B: 3\r\n\r\n"; got != want {
		t.Errorf("client head:\n%q\nwant\n%q", got, want)
	}
}

// RFC 9112 §6.3: a response with both Transfer-Encoding and Content-Length is framed by
// Transfer-Encoding, and an intermediary removes Content-Length before forwarding it.
func TestResponseContentLengthDroppedWithTransferEncoding(t *testing.T) {
	for _, tc := range []struct{ head, want string }{
		{
			"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
			"HTTP/1.1 200 OK\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
		},
		{
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\ncontent-length: 5\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
		},
		{ // without Transfer-Encoding, Content-Length stays
			"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
		},
	} {
		var r Response
		if err := ParseResponse([]byte(tc.head), false, &r); err != nil {
			t.Fatalf("%q: %v", tc.head, err)
		}
		if got := string(AppendClientHead(nil, &r, true, false)); got != tc.want {
			t.Errorf("%q for the client:\n%q\nwant\n%q", tc.head, got, tc.want)
		}
	}
}

// Forwarded and X-Real-IP, like X-Forwarded-For and X-Forwarded-Proto, are kept from a trusted
// proxy only: from anyone else they are dropped, so a client cannot forge the address a
// backend reads from them; so are X-Forwarded-Host, -Port, -Prefix, -Scheme and -Ssl, which a
// framework builds its absolute URLs from.
// The same names spelled with an underscore (CGI, WSGI and PHP backends read '_' as '-') are
// dropped from anyone, trusted proxy or not; other names with an underscore pass.
func TestForwardedAndRealIPOnlyFromTrustedProxies(t *testing.T) {
	head := "GET / HTTP/1.1\r\nHost: x\r\nForwarded: for=6.6.6.6\r\nx-real-ip: 6.6.6.6\r\nX-Other: 1\r\nFORWARDED: for=7.7.7.7\r\n" +
		"X_Forwarded_For: 6.6.6.6\r\nX-Real_IP: 6.6.6.6\r\nx_forwarded-proto: http\r\nX-Forwarded_Hostname: h\r\nMy_Header: 1\r\n" +
		"X-Forwarded-Host: evil.example\r\nx-forwarded-port: 1\r\nX-Forwarded-Prefix: /evil\r\nX-Forwarded-Scheme: http\r\nX-Forwarded-SSL: off\r\nX_Forwarded_Host: u\r\n\r\n"
	var r Request
	if err := ParseRequest([]byte(head), &r); err != nil {
		t.Fatal(err)
	}
	got := string(AppendUpstreamHead(nil, &r, []byte("10.0.0.1"), false, true, "b:1"))
	if want := "GET / HTTP/1.1\r\nHost: x\r\nX-Other: 1\r\nX-Forwarded_Hostname: h\r\nMy_Header: 1\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: https\r\n\r\n"; got != want {
		t.Errorf("from an untrusted client:\n%q\nwant\n%q", got, want)
	}
	got = string(AppendUpstreamHead(nil, &r, []byte("10.0.0.1"), true, true, "b:1"))
	if want := "GET / HTTP/1.1\r\nHost: x\r\nForwarded: for=6.6.6.6\r\nx-real-ip: 6.6.6.6\r\nX-Other: 1\r\nFORWARDED: for=7.7.7.7\r\n" +
		"X-Forwarded_Hostname: h\r\nMy_Header: 1\r\n" +
		"X-Forwarded-Host: evil.example\r\nx-forwarded-port: 1\r\nX-Forwarded-Prefix: /evil\r\nX-Forwarded-Scheme: http\r\nX-Forwarded-SSL: off\r\n" +
		"X-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: https\r\n\r\n"; got != want {
		t.Errorf("from a trusted proxy:\n%q\nwant\n%q", got, want)
	}
}

// Trailer is end-to-end (RFC 9110 §6.6.2): it reaches the backend with a chunked request and the
// client with a chunked response; only an HTTP/1.0 client, which gets the body decoded without
// its trailer section, does not get it (RFC 9112 §7.1.3).
func TestTrailerIsForwarded(t *testing.T) {
	var r Request
	head := "POST / HTTP/1.1\r\nHost: x\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n"
	if err := ParseRequest([]byte(head), &r); err != nil {
		t.Fatal(err)
	}
	got := string(AppendUpstreamHead(nil, &r, []byte("10.0.0.1"), false, false, "b:1"))
	if want := "POST / HTTP/1.1\r\nHost: x\r\nTrailer: X-Sum\r\nX-Forwarded-For: 10.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"; got != want {
		t.Errorf("for the backend:\n%q\nwant\n%q", got, want)
	}
	var resp Response
	rh := "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n"
	if err := ParseResponse([]byte(rh), false, &resp); err != nil {
		t.Fatal(err)
	}
	if got := string(AppendClientHead(nil, &resp, false, false)); got != rh {
		t.Errorf("for the client:\n%q\nwant\n%q", got, rh)
	}
	if got, want := string(AppendClientHead(nil, &resp, true, true)), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"; got != want {
		t.Errorf("decoded for an HTTP/1.0 client:\n%q\nwant\n%q", got, want)
	}
}

// connectionTokenHead is a head of tokens Connection tokens (some repeated, some distinct)
// and fields header lines, some of them named by the tokens.
func connectionTokenHead(start string, tokens, fields int) []byte {
	var b strings.Builder
	b.WriteString(start)
	b.WriteString("Connection: ")
	for i := 0; i < tokens; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%2 == 0 {
			b.WriteString("a")
		} else {
			fmt.Fprintf(&b, "t%x", i)
		}
	}
	b.WriteString("\r\n")
	for i := 0; i < fields; i++ {
		if i%2 == 0 {
			b.WriteString("A: 1\r\n")
		} else {
			fmt.Fprintf(&b, "t%x: 1\r\n", i)
		}
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// BenchmarkConnectionTokens parses heads with many Connection tokens and header lines: the
// time per byte stays flat as the head grows (it grew with the head's size squared when every
// token was compared with every field). Requests have at most MaxRequestFields lines; a
// backend's response is not capped, so it carries the big field counts.
func BenchmarkConnectionTokens(b *testing.B) {
	for _, n := range []int{1 << 10, 4 << 10, 16 << 10} {
		req := connectionTokenHead("GET / HTTP/1.1\r\nHost: x\r\n", n, MaxRequestFields-2)
		b.Run(fmt.Sprintf("request/tokens=%d", n), func(b *testing.B) {
			var r Request
			b.SetBytes(int64(len(req)))
			for b.Loop() {
				if err := ParseRequest(req, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
		resp := connectionTokenHead("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", n, n/2)
		b.Run(fmt.Sprintf("response/tokens=%d,fields=%d", n, n/2), func(b *testing.B) {
			var r Response
			b.SetBytes(int64(len(resp)))
			for b.Loop() {
				if err := ParseResponse(resp, false, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
