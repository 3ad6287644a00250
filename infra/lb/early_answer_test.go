package lb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// earlyRefuser answers its health 200 and refuses any upload at once, from its head alone:
// 413 and the connection closed without reading the body (what a server with a body limit
// does; a close with the body unread sends a reset).
func earlyRefuser(t *testing.T) string {
	return earlyRefuserOn(t, tcpserver.Listen(t))
}

// earlyRefuserOn is earlyRefuser on ln. It looks at a request's head with MSG_PEEK, so that an
// upload's connection is reset with every byte the LB sent still unread: its window does not
// open for the rest of the request, which (on a narrowListener) then waits in the LB's send
// buffer until the reset, and the LB's next write fails (unless the ACK that comes with the
// 413 lets it finish first: a race).
func earlyRefuserOn(t *testing.T, ln net.Listener) string {
	tcpserver.ServeOn(t, ln, func(c net.Conn) {
		defer c.Close()
		head, err := peekHead(c)
		if err != nil {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return
		}
		if req.URL.Path == "/health" {
			_, _ = io.ReadFull(c, head)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large")
	})
	return ln.Addr().String()
}

// peekHead returns the request head waiting on c (at most 4 KiB) without reading it.
func peekHead(c net.Conn) ([]byte, error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 4<<10)
	var n int
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, perr = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
		if errors.Is(perr, syscall.EAGAIN) {
			return false
		}
		// a head not whole yet: wait for more (peeked bytes stay, the next arrival is an edge)
		return perr != nil || n == 0 || n == len(buf) || bytes.Contains(buf[:n], []byte("\r\n\r\n"))
	})
	switch {
	case err != nil:
		return nil, err
	case perr != nil:
		return nil, perr
	}
	i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
	if i < 0 {
		return nil, errors.New("no whole head")
	}
	return buf[:i+4], nil
}

// narrowListener listens on 127.0.0.1:0 with the smallest receive buffer and MSS, inherited by
// the connections it accepts: the LB's send buffer for them is small too (Linux sizes it by the
// peer's MSS), so a request of 16 KiB is not taken whole by one write (about 15 KiB is), and the
// LB writes the rest when the backend lets it.
func narrowListener(t *testing.T) net.Listener {
	lc := net.ListenConfig{Control: func(network, address string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1); serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 88)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// A backend that answers an upload before reading its body (413 from the head, 401 for a
// missing token) and closes: the LB's write of the rest of the body fails, yet the client gets
// the backend's answer, not a 502, and the backend, which answered, stays in rotation.
func TestEarlyAnswerToAnUploadIsRelayed(t *testing.T) {
	set := fastSettings(earlyRefuser(t))
	l := startLB(t, set, slowChecks())
	get(t, client(), l.url("/_lb/health")) // the first checks are done
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	const size = 64 << 20
	go func() {
		if _, err := fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: lb\r\nContent-Length: %d\r\n\r\n", size); err != nil {
			return
		}
		chunk := []byte(strings.Repeat("x", 1<<20))
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	st := l.Backends()[0].Status()
	if resp.StatusCode != 413 {
		t.Errorf("upload refused early by its backend: client got %d, want the backend's 413", resp.StatusCode)
	}
	if st.State != Healthy {
		t.Errorf("the backend answered, yet it is %s (last transition %+v)", st.State, st.Transitions[len(st.Transitions)-1])
	}
}

// The same with a small upload, whole in the LB's buffer (served by the event loops), a number
// of times: whether the backend's reset comes before the LB's last write of the request or
// after it is a race, and either way the client gets the 413 and the backend stays in rotation.
func TestEarlyAnswerToASmallUpload(t *testing.T) {
	l := startLB(t, fastSettings(earlyRefuserOn(t, narrowListener(t))), slowChecks())
	c := client()
	get(t, c, l.url("/_lb/health"))
	for i := 0; i < 100; i++ {
		resp, err := c.Post(l.url("/upload"), "application/octet-stream", strings.NewReader(strings.Repeat("x", loopBodyLimit)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		st := l.Backends()[0].Status()
		if resp.StatusCode != 413 || st.State != Healthy {
			t.Fatalf("small upload %d refused early: client got %d (want 413), backend %s", i, resp.StatusCode, st.State)
		}
	}
}

// A backend that takes the head of an upload and resets the connection with no answer at all,
// so that a write of the body fails, is one whose connection broke before the response, as a
// crashed backend's does: the client gets 502 (a request with a body is never sent again), and
// the backend, on a fresh connection, is ejected at once. (The body is large enough that the
// reset always comes while it is written.) One that answers first is not blamed: above.
func TestUploadCutOffWithoutAnswerIsA502AndEjects(t *testing.T) {
	ln := narrowListener(t)
	tcpserver.ServeOn(t, ln, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReaderSize(c, 16))
		if err != nil {
			return
		}
		if req.URL.Path == "/health" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		_ = c.(*net.TCPConn).SetLinger(0) // a reset, whatever was read
	})
	l := startLB(t, fastSettings(ln.Addr().String()), slowChecks())
	get(t, client(), l.url("/_lb/health"))
	resp, err := client().Post(l.url("/upload"), "application/octet-stream", strings.NewReader(strings.Repeat("x", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st := l.Backends()[0].Status()
	if resp.StatusCode != 502 || st.State == Healthy {
		t.Fatalf("upload cut off: client got %d (want 502), backend %s (want ejected)", resp.StatusCode, st.State)
	}
}
