package lb

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// heldHost is a backend whose kernel stops completing connections to it while it is held. It
// listens with an accept backlog of 1 and answers everything (its health checks too) with 200
// "h" until held; hold then stops accepting and fills the accept queue, so that Linux drops
// every new SYN and a connect to it stays pending (SYN-sent, the SYN retransmitted a second
// later, then as the kernel's backoff has it): its checks time out, the LB takes it out of rotation, and a request sent to it is
// still connecting. release accepts again, so the next SYN retransmission completes the
// connect; from hold on it reads every request and never writes a byte (a hung app).
type heldHost struct {
	addr    string
	ln      *net.TCPListener
	held    atomic.Bool
	parked  chan struct{} // closed once the accept loop stopped for hold
	resume  chan struct{} // closed by release
	mu      sync.Mutex
	conns   []net.Conn // closed when the test ends, fillers included
	fillers int
}

func startHeldHost(t *testing.T) *heldHost {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 1); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "held-host")
	l, err := net.FileListener(f) // (a dup: the backlog stays 1)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := &heldHost{ln: l.(*net.TCPListener), parked: make(chan struct{}), resume: make(chan struct{})}
	h.addr = l.Addr().String()
	t.Cleanup(func() {
		h.ln.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := h.ln.Accept()
			if errors.Is(err, os.ErrDeadlineExceeded) && h.held.Load() {
				close(h.parked)
				<-h.resume
				continue
			}
			if err != nil {
				return
			}
			h.keep(c)
			go h.serve(c)
		}
	}()
	return h
}

func (h *heldHost) keep(c net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conns = append(h.conns, c)
}

func (h *heldHost) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if h.held.Load() {
			_, _ = io.Copy(io.Discard, br) // until the LB gives up on the connection
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nh")
	}
}

// hold stops accepting and fills the accept queue: connects that start after it stay pending.
func (h *heldHost) hold(t *testing.T) {
	t.Helper()
	h.held.Store(true)
	_ = h.ln.SetDeadline(time.Unix(1, 0)) // the accept loop's Accept returns, and it waits for release
	select {
	case <-h.parked:
	case <-time.After(5 * time.Second):
		t.Fatal("the held host's accept loop did not stop")
	}
	for {
		c, err := net.DialTimeout("tcp", h.addr, 100*time.Millisecond)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			break // the queue is full: this SYN was dropped
		}
		if err != nil {
			t.Fatalf("filling the held host's accept queue: %v", err)
		}
		h.keep(c)
		if h.fillers++; h.fillers > 8 {
			t.Fatalf("the held host's accept queue (backlog 1) took %d connections and is not full", h.fillers)
		}
	}
}

// release accepts again: pending connects complete at their next SYN retransmission.
func (h *heldHost) release() {
	_ = h.ln.SetDeadline(time.Time{})
	close(h.resume)
}

// A GET still connecting to a backend when the checks take it out of rotation is resent to
// the healthy backend as soon as its connect completes and it is written (on both engines,
// as the goroutine path's wait does): not left waiting there for header_timeout and a 504.
// The connect is held pending by a full accept queue (heldHost), so the GET is in phConnect
// at the ejection by construction: the host completes no connect until the test releases it,
// after the ejection.
func TestGETConnectingToAnEjectedBackendIsResent(t *testing.T) {
	h, a := startHeldHost(t), startBackend(t, "a")
	set := fastSettings(h.addr, a.addr())
	set.Interval, set.Timeout, set.UnhealthyThreshold = 300*time.Millisecond, 250*time.Millisecond, 4
	set.ConnectTimeout = 20 * time.Second // the GET's connect must not fail first (a retry, not a resend)
	set.HeaderTimeout = 10 * time.Second
	l := startLB(t, set)
	poll.Until(t, 10*time.Second, "both backends in rotation", func() bool {
		bs := l.Backends()
		return bs[0].InRotation() && bs[1].InRotation()
	})
	h.hold(t)
	out := make([]answer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() { // strict round robin: one to each backend, each on a connection of its own
			defer wg.Done()
			t0 := time.Now()
			resp, err := client().Get(l.url("/"))
			if err != nil {
				errs[i] = err
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			out[i] = answer{code: resp.StatusCode, body: string(b), at: time.Now(), took: time.Since(t0)}
			errs[i] = err
		}()
	}
	poll.Until(t, 10*time.Second, "the held host out of rotation", func() bool { return !l.Backends()[0].InRotation() })
	released := time.Now()
	h.release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	for i, g := range out {
		if g.code != 200 || g.body != "a" || g.took >= set.HeaderTimeout {
			t.Fatalf("GET %d: %d %q after %s; want 200 from a well before header_timeout (%s)", i, g.code, g.body, g.took, set.HeaderTimeout)
		}
	}
	if !out[1].at.After(released) {
		t.Fatalf("both GETs answered before the held host was released (%s): none was connecting to it", released)
	}
	ejectedByChecks(t, l, h.addr)
	if m := resentMetric(t, l); m != "zero502_lb_resent_after_eject_total 1" {
		t.Fatalf("%s, want 1", m)
	}
	if n := l.retries.Load(); n != 0 {
		t.Fatalf("retries %d: the GET must be resent, not retried after a failed connect", n)
	}
}
