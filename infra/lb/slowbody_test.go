package lb

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// upload is one POST /upload whose body a client sends in pieces, pausing between them.
type upload struct {
	from   string // client source IP (any 127.0.0.x on Linux), "" for the default
	size   int
	pieces int
	every  time.Duration
	stall  bool // send the first piece only, then nothing
}

type uploadResult struct {
	status int
	body   string
	err    error
}

// send runs the upload against addr. The response is read while the body is still going out,
// so an early answer (408, 429) is seen before the LB closes the connection.
func (u upload) send(addr string) uploadResult {
	d := net.Dialer{Timeout: 5 * time.Second}
	if u.from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(u.from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return uploadResult{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	body := bigBody[:u.size]
	go func() {
		if _, err := fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: lb\r\nContent-Length: %d\r\n\r\n", u.size); err != nil {
			return
		}
		piece := (u.size + u.pieces - 1) / u.pieces
		for off := 0; off < u.size; off += piece {
			if off > 0 {
				if u.stall {
					return
				}
				time.Sleep(u.every) // pacing the client, not an assertion
			}
			if _, err := c.Write(body[off:min(off+piece, u.size)]); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil {
		return uploadResult{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return uploadResult{status: resp.StatusCode, body: string(b), err: err}
}

func uploadAnswer(size int) string {
	sum := sha256.Sum256(bigBody[:size])
	return fmt.Sprintf("%d %s", size, hex.EncodeToString(sum[:]))
}

// keepGetting sends GET / until stop is called and returns how many did not get 200.
func keepGetting(t *testing.T, l *testLB) (stop func() (ok, failed int64)) {
	t.Helper()
	var good, bad atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := client()
		for {
			select {
			case <-done:
				return
			default:
			}
			resp, err := c.Get(l.url("/"))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != 200 {
				bad.Add(1)
			} else {
				good.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		return good.Load(), bad.Load()
	}
}

// requireUntouched fails unless b is healthy with no transition since its first check and no
// failed request.
func requireUntouched(t *testing.T, b *Backend) {
	t.Helper()
	st := b.Status()
	if st.State != Healthy || !onlyFirstCheck(st.Transitions) || st.Requests["errors"] != 0 || st.Requests["5xx"] != 0 {
		t.Fatalf("the backend must not be blamed for a client: state %s, transitions %+v, requests %v",
			st.State, st.Transitions, st.Requests)
	}
}

// A body that trickles in steadily for longer than body_timeout in total is relayed: the
// timeouts bound silence, never the duration. Large bodies stream on the goroutine path, small
// ones start in the event loop and are handed over once slow.
func TestSlowSteadyUploadOutlastingTheBodyTimeoutSucceeds(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.BodyTimeout = 300 * time.Millisecond
	set.ClientHeaderTimeout = 500 * time.Millisecond
	l := startLB(t, set, slowChecks())
	stop := keepGetting(t, l)
	var wg sync.WaitGroup
	results := make([]uploadResult, 3)
	sizes := []int{40_000, 40_000, 3_000} // two beyond loopBodyLimit, one within
	for i, size := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = upload{size: size, pieces: 25, every: 50 * time.Millisecond}.send(l.Addr())
		}()
	}
	wg.Wait()
	ok, failed := stop()
	for i, r := range results {
		if r.err != nil || r.status != 200 || r.body != uploadAnswer(sizes[i]) {
			t.Errorf("upload %d (%d bytes over ~1.2s, body_timeout 300ms): %d %q %v; want 200 and the whole body",
				i, sizes[i], r.status, r.body, r.err)
		}
	}
	if failed != 0 || ok == 0 {
		t.Errorf("GETs beside the uploads: %d ok, %d failed; want all 200", ok, failed)
	}
	requireUntouched(t, l.Backends()[0])
}

// A client that stops sending its body gets 408 and its connection closed; the backend it was
// going to is not blamed, and everybody else keeps being served.
func TestStalledUploadIs408AndTheBackendStaysHealthy(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.BodyTimeout = 300 * time.Millisecond
	set.ClientHeaderTimeout = 400 * time.Millisecond
	l := startLB(t, set, slowChecks())
	stop := keepGetting(t, l)
	for _, size := range []int{40_000, 3_000} { // goroutine path, event loop
		r := upload{size: size, pieces: 10, stall: true}.send(l.Addr())
		if r.err != nil || r.status != 408 {
			t.Errorf("%d-byte body stalled after its first piece: %d %v; want 408", size, r.status, r.err)
		}
	}
	ok, failed := stop()
	if failed != 0 || ok == 0 {
		t.Errorf("GETs beside the stalled uploads: %d ok, %d failed; want all 200", ok, failed)
	}
	requireUntouched(t, l.Backends()[0])
}

// max_slow_bodies_per_ip: one client IP's slow bodies beyond the cap get 429 (the newest), its
// earlier ones go through, and another IP's slow body is not affected.
func TestSlowBodiesAreCappedPerClientIP(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.MaxSlowBodiesPerIP = 2
	l := startLB(t, set, slowChecks())
	slow := upload{from: "127.0.0.2", size: 20_000, pieces: 30, every: 100 * time.Millisecond} // ~3s
	results := make([]uploadResult, 4)
	var wg sync.WaitGroup
	run := func(i int, u upload) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = u.send(l.Addr())
		}()
	}
	run(0, slow)
	run(1, slow)
	poll.Until(t, 5*time.Second, "two slow bodies from 127.0.0.2", func() bool { return l.slow.active.Load() == 2 })
	run(2, slow)
	other := slow
	other.from = "127.0.0.3"
	run(3, other)
	wg.Wait()
	for i, want := range []int{200, 200, 429, 200} {
		if r := results[i]; r.err != nil || r.status != want {
			t.Errorf("upload %d from %s: %d %v; want %d", i, []string{"127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3"}[i], r.status, r.err, want)
		}
	}
	if got := l.slow.refused.Load(); got != 1 {
		t.Errorf("slow-body refusals: %d, want 1", got)
	}
	poll.Until(t, 5*time.Second, "slow-body slots given back", func() bool { return l.slow.active.Load() == 0 })
	requireUntouched(t, l.Backends()[0])
	if m := scrape(t, l); !strings.Contains(m, "zero502_lb_slow_body_refusals_total 1") {
		t.Errorf("/metrics does not count the refusal:\n%s", grepLines(m, "slow"))
	}
}

// max_conns: a connection beyond the cap is accepted and closed at once; when one closes there
// is room again.
func TestMaxConnsAcceptsAndClosesTheExtra(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.MaxConns = 3
	l := startLB(t, set, slowChecks())
	var held []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	poll.Until(t, 5*time.Second, "3 client connections held", func() bool { return l.clients() == 3 })
	extra := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
	if extra != "" {
		t.Fatalf("a 4th connection with max_conns 3: got %q, want it closed unanswered", extra)
	}
	if got := l.connsRefused.Load(); got != 1 {
		t.Fatalf("refused connections: %d, want 1", got)
	}
	held[0].Close()
	poll.Until(t, 5*time.Second, "a connection slot free", func() bool { return l.clients() == 2 })
	if code, body, _ := get(t, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}, l.url("/")); code != 200 || body != "a" {
		t.Fatalf("below the cap again: %d %q", code, body)
	}
	if m := scrape(t, l); !strings.Contains(m, "zero502_lb_client_connections_refused_total 1") ||
		!strings.Contains(m, "zero502_lb_max_client_connections 3") {
		t.Errorf("/metrics:\n%s", grepLines(m, "client_connections"))
	}
}

func scrape(t *testing.T, l *testLB) string {
	t.Helper()
	_, body, _ := get(t, client(), "http://"+l.AdminAddr()+"/metrics")
	return body
}

func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// stuckBackend answers its health checks and takes requests, but never reads a request body:
// a backend too busy to take the upload.
func stuckBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			if strings.HasPrefix(string(buf[:n]), "GET /health ") {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				c.Close()
				continue
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String()
}

// A backend that takes no byte of a request body for body_timeout gets a 504 answered for it,
// like one that sends no response head in time, and is not ejected: it is slow, not broken.
func TestBackendNotTakingTheBodyIs504NotAnEjection(t *testing.T) {
	set := fastSettings(stuckBackend(t))
	set.BodyTimeout = 300 * time.Millisecond
	l := startLB(t, set, slowChecks())
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	const size = 64 << 20 // more than the socket buffers on the way hold
	go func() {
		if _, err := fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: lb\r\nContent-Length: %d\r\n\r\n", size); err != nil {
			return
		}
		for sent := 0; sent < size; sent += len(bigBody) {
			if _, err := c.Write(bigBody); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil || resp.StatusCode != 504 {
		t.Fatalf("upload to a backend that does not read it: %v %v; want 504", resp, err)
	}
	poll.Until(t, 5*time.Second, "the request no longer in flight", func() bool { return l.Backends()[0].Status().InFlight == 0 })
	st := l.Backends()[0].Status()
	if st.State != Healthy || !onlyFirstCheck(st.Transitions) || l.ejections.Load() != 0 {
		t.Fatalf("a slow backend must not be ejected: state %s, transitions %+v, ejections %d", st.State, st.Transitions, l.ejections.Load())
	}
}

// A body the LB drops because it answers itself (503: no backend in rotation) is read under the
// same rule: a steady trickle longer than the client timeout in total still gets its answer.
func TestSlowBodyDroppedBeforeA503IsReadOnSilenceToo(t *testing.T) {
	set := fastSettings(deadAddr(t))
	set.UnhealthyThreshold = 1
	set.ClientHeaderTimeout = 500 * time.Millisecond
	l := startLB(t, set)
	poll.Until(t, 5*time.Second, "the dead backend out of rotation", func() bool { return l.Backends()[0].State() == Unhealthy })
	for _, size := range []int{40_000, 3_000} {
		r := upload{size: size, pieces: 25, every: 50 * time.Millisecond}.send(l.Addr())
		if r.err != nil || r.status != 503 {
			t.Errorf("%d-byte body over ~1.2s with no backend: %d %v; want 503", size, r.status, r.err)
		}
	}
}
