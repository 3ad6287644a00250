package lb

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// finalResponses reads n final responses from br (skipping 100 Continue) and returns their
// status codes and body lengths.
func finalResponses(t *testing.T, br *bufio.Reader, n int, method string) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("response %d: %v (so far %q)", len(out), err, out)
		}
		if resp.StatusCode == 100 {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("response %d body: %v", len(out), err)
		}
		out = append(out, fmt.Sprintf("%d/%d", resp.StatusCode, len(b)))
	}
	return out
}

// Responses without a body (204, 304 with a Content-Length, the answer to HEAD) end at their
// head on every path: the event loop's, and the goroutine path's after a hand-off (a large
// body, a chunked body, Expect: 100-continue). The next request on the connection is answered
// right after (raw gives up after 5 s: an LB waiting for a body leaves the second unanswered).
func TestResponsesWithoutABodyOnEveryPath(t *testing.T) {
	upload := strings.Repeat("u", 20000)
	paths := []struct{ name, extra, body string }{
		{"event loop", "", ""},
		{"large body", "Content-Length: 20000\r\n", upload},
		{"chunked body", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n"},
		{"Expect: 100-continue", "Content-Length: 5\r\nExpect: 100-continue\r\n", "hello"},
	}
	answers := []struct{ name, method, answer, want string }{
		{"204", "POST", "HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n", "204/0"},
		{"304 with a Content-Length", "POST", "HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: \"x\"\r\n\r\n", "304/0"},
		{"HEAD", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", "200/0"},
	}
	for _, a := range answers {
		backend := scriptedBackend(t, a.answer)
		l := startLB(t, fastSettings(backend))
		for _, p := range paths {
			if a.method == "HEAD" && p.body != "" && p.name != "Expect: 100-continue" {
				continue // HEAD with a body: nothing real sends it
			}
			t.Run(a.name+" on the "+p.name, func(t *testing.T) {
				body := p.body
				extra := p.extra
				if a.method == "HEAD" && p.name == "Expect: 100-continue" {
					extra, body = "Expect: 100-continue\r\n", "" // hands HEAD to the goroutine path
				}
				req := a.method + " /r HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n" + body
				out := raw(t, l.Addr(), req+a.method+" /r HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5*time.Second)
				got := finalResponses(t, bufio.NewReader(strings.NewReader(out)), 2, a.method)
				if got[0] != a.want || got[1] != a.want {
					t.Fatalf("%q, want two %s", got, a.want)
				}
			})
		}
	}
}
