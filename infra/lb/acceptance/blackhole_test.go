package acceptance

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The lab's "blocking connect" mistake: a backend that never answers the SYN must cost one
// request the 1 s connect timeout (then the GET goes to the next backend), and nobody else.

// blackhole is a loopback address that answers one health check 200 (the LB's first, which
// puts it in rotation) and where connects hang after hole: a listener with a full accept queue
// that no longer accepts, so the kernel drops further SYNs. hole skips t where the kernel does
// not do that.
func blackhole(t *testing.T) (addr string, hole func()) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr = "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	checked := make(chan struct{})
	go func() { // the first health check: read the request, answer 200, accept nothing more
		defer close(checked)
		cfd, _, err := syscall.Accept(fd)
		if err != nil {
			return
		}
		defer syscall.Close(cfd)
		var buf [4096]byte
		_, _ = syscall.Read(cfd, buf[:])
		_, _ = syscall.Write(cfd, []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	}()
	return addr, func() {
		select {
		case <-checked:
		case <-time.After(15 * time.Second):
			t.Fatal("the LB never checked the backend")
		}
		for i := 0; i < 8; i++ { // fill the accept queue
			c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
			if err != nil {
				return // this connect hung: the queue is full
			}
			t.Cleanup(func() { c.Close() })
		}
		t.Skip("cannot make a black-hole listener here: connects to a full accept queue still succeed")
	}
}

func TestBlackholedBackendCostsOneConnectTimeout(t *testing.T) {
	t.Parallel()
	needLB(t)
	holeAddr, makeHole := blackhole(t)
	hole := &backendProc{t: t, name: "hole", addr: holeAddr}
	a := startBackend(t, "a")
	// Slow health checks: until the proxy itself meets the hung connect, the hole stays in rotation.
	l := startLB(t, []*backendProc{hole, a}, "--health-interval", "10s", "--health-timeout", "3s")
	makeHole() // its first check put it in rotation; from now on its connects hang

	start := time.Now()
	var slowest time.Duration
	for i := 0; i < 6; i++ {
		t0 := time.Now()
		resp, body := l.mustGet(t, "/")
		if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "a" {
			t.Fatalf("request %d: status %d %q from %q, want 200 from a", i+1, resp.StatusCode, body, resp.Header.Get("X-Backend"))
		}
		slowest = max(slowest, time.Since(t0))
	}
	if slowest < 900*time.Millisecond || slowest > 3500*time.Millisecond {
		t.Errorf("slowest request took %s: want one 1 s connect timeout, then the retry", slowest)
	}
	if total := time.Since(start); total > 5*time.Second {
		t.Errorf("6 requests took %s: the hung connect was paid more than once", total)
	}
	if st := l.status(t)[hole.addr]; st.InRotation {
		t.Errorf("after a connect timeout the black-holed backend is still in rotation (state %q)", st.State)
	}
	t.Logf("black-holed backend: slowest request %s, 6 requests in %s", slowest.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
