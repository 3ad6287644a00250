package lb

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/uring"
)

// The loops batch their receives and sends through io_uring where it is allowed and make the
// same calls one at a time where it is not (loop_io_linux.go): either way an exchange is the
// same, from keep-alive GETs to a body larger than the sockets' buffers, a chunked response, a
// small POST body and pipelined requests.
func TestTheLoopsServeTheSameWithAndWithoutIOURing(t *testing.T) {
	if testSlowPathOnly() {
		t.Skip("the goroutines engine has no event loops")
	}
	probe, ringErr := uring.NewBatch(true)
	probe.Close()
	for _, ring := range []bool{true, false} {
		t.Run(fmt.Sprintf("io_uring=%v", ring), func(t *testing.T) {
			if ring && ringErr != nil {
				t.Skipf("io_uring is not allowed here: %v", ringErr)
			}
			b := startBackend(t, "b")
			set := fastSettings(b.addr())
			set.noRing = !ring
			l := startLB(t, set)
			for i, lp := range l.loops.all {
				if lp.io.Ring() != ring {
					t.Fatalf("loop %d sends through io_uring: %v, want %v", i, lp.io.Ring(), ring)
				}
			}
			c := client()
			for i := range 20 {
				if status, body, _ := get(t, c, l.url("/")); status != 200 || body != "b" {
					t.Fatalf("keep-alive GET %d: %d %q, want 200 \"b\"", i, status, body)
				}
			}
			if status, body, _ := get(t, c, l.url("/big")); status != 200 || body != string(bigBody) {
				t.Fatalf("GET /big: %d and %d bytes, want 200 and the %d bytes of the body", status, len(body), len(bigBody))
			}
			if status, body, _ := get(t, c, l.url("/chunked")); status != 200 || body != string(bigBody[:5000]) {
				t.Fatalf("GET /chunked: %d and %d bytes, want 200 and the 5000 bytes of its chunks", status, len(body))
			}
			resp, err := c.Post(l.url("/upload"), "application/octet-stream", bytes.NewReader(bigBody[:1000]))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			sum := sha256.Sum256(bigBody[:1000])
			if want := "1000 " + hex.EncodeToString(sum[:]); resp.StatusCode != 200 || string(got) != want {
				t.Fatalf("POST /upload: %d %q, want 200 %q", resp.StatusCode, got, want)
			}
			out := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /headers HTTP/1.1\r\nHost: y\r\n\r\n"+
				"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
			if n := strings.Count(out, "HTTP/1.1 200 "); n != 3 || !strings.Contains(out, "Host: y") {
				t.Fatalf("three pipelined requests: %d answered 200 (%q), want 3, the second from /headers", n, out)
			}
		})
	}
}
