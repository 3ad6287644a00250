package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// A chunked request body streams through the client's read buffer after its head: bytes of it
// that arrive after the head was relayed land where the head was. The request the LB answers
// and logs must still be the one the client sent: a trailer field named HEAD, read where the
// method POST stood, must not make the LB read the backend's answer as one to a HEAD (a head
// without its body, the client left waiting for it), on either engine.
func TestChunkedBodyBytesDoNotRewriteTheRequest(t *testing.T) {
	sawLastChunk := make(chan struct{}, 1)
	addr := tcpserver.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			first, err := br.ReadString('\n')
			if err != nil {
				return
			}
			for line := first; line != "\r\n"; {
				if line, err = br.ReadString('\n'); err != nil {
					return
				}
			}
			if !strings.HasPrefix(first, "POST ") {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
				continue
			}
			for line := ""; line != "0\r\n"; { // the chunks, up to the last one
				if line, err = br.ReadString('\n'); err != nil {
					return
				}
			}
			sawLastChunk <- struct{}{}
			for line := ""; line != "\r\n"; { // the trailer section
				if line, err = br.ReadString('\n'); err != nil {
					return
				}
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
		}
	})
	l := startSteadyLB(t, fastSettings(addr))
	c := dialLB(t, l.Addr(), 10*time.Second)
	if _, err := io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sawLastChunk: // the LB relayed (and so consumed) everything sent so far
	case <-time.After(5 * time.Second):
		t.Fatal("the last chunk did not reach the backend")
	}
	if _, err := io.WriteString(c, "HEAD: 1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "hello" {
		t.Fatalf("the POST's answer came with the body %q (%v), want the backend's hello", body, err)
	}
}
