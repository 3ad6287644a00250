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

// blackhole is a loopback address where connects hang: a listener with a full accept queue that
// never accepts, so the kernel drops further SYNs. It skips t where the kernel does not do that.
func blackhole(t *testing.T) string {
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
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	for i := 0; i < 8; i++ { // fill the accept queue
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return addr // this connect hung: the queue is full
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("cannot make a black-hole listener here: connects to a full accept queue still succeed")
	return ""
}

func TestBlackholedBackendCostsOneConnectTimeout(t *testing.T) {
	t.Parallel()
	needLB(t)
	hole := &backendProc{t: t, name: "hole", addr: blackhole(t)}
	a := startBackend(t, "a")
	// Slow health checks: until the proxy itself meets the hung connect, the hole stays in rotation.
	l := startLB(t, []*backendProc{hole, a}, "--health-interval", "10s", "--health-timeout", "3s")

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
