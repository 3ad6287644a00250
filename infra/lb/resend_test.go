package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// cutHost is a backend on a real socket that answers everything (its health checks too) with
// 200 "h" until it is cut; from then on it reads every request and never writes a byte, as a
// host dropped off the network: its checks time out, so the LB takes it out of rotation, and
// the requests it took wait. With partial, a cut host writes the first line of a response head
// to a request (not to a check) and then nothing more.
type cutHost struct {
	addr    string
	partial bool
	cut     atomic.Bool
	taken   atomic.Int64 // requests (not checks) it read while cut
}

func startCutHost(t *testing.T, partial bool) *cutHost {
	t.Helper()
	h := &cutHost{partial: partial}
	h.addr = tcpserver.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if h.cut.Load() {
				if req.URL.Path != "/health" {
					h.taken.Add(1)
					if h.partial {
						_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
					}
				}
				_, _ = io.Copy(io.Discard, br) // until the LB gives up on the connection
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nh")
		}
	})
	return h
}

// resendSettings are an LB over the cut host and a healthy backend, with checks that take the
// cut host out within about a second (three failed checks of 250 ms, 300 ms apart), and
// header_timeout.
func resendSettings(h *cutHost, healthy *testBackend, headerTimeout time.Duration) Settings {
	set := fastSettings(h.addr, healthy.addr())
	set.Interval, set.Timeout, set.UnhealthyThreshold = 300*time.Millisecond, 250*time.Millisecond, 3
	set.HeaderTimeout = headerTimeout
	return set
}

// answer is what one client request got, and when.
type answer struct {
	code int
	body string
	at   time.Time
	took time.Duration
}

// cutWhileTwoWait waits until both backends of l are in rotation, cuts h and sends two requests
// at once, each on its own connection: strict round robin sends one to the cut host and one to
// the healthy backend. It returns their answers, sorted by status code.
func cutWhileTwoWait(t *testing.T, l *testLB, h *cutHost, method, path, body string) []answer {
	t.Helper()
	poll.Until(t, 10*time.Second, "both backends in rotation", func() bool {
		bs := l.Backends()
		return bs[0].InRotation() && bs[1].InRotation()
	})
	h.cut.Store(true)
	out := make([]answer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client() // a connection of its own
			req, err := http.NewRequest(method, l.url(path), nil)
			if body != "" {
				req, err = http.NewRequest(method, l.url(path), strings.NewReader(body))
			}
			if err != nil {
				errs[i] = err
				return
			}
			t0 := time.Now()
			resp, err := c.Do(req)
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
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].code < out[j].code })
	return out
}

// resentMetric is the zero502_lb_resent_after_eject_total line of l's /metrics.
func resentMetric(t *testing.T, l *testLB) string {
	t.Helper()
	_, body, _ := get(t, client(), "http://"+l.AdminAddr()+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "zero502_lb_resent_after_eject_total ") {
			return line
		}
	}
	t.Fatalf("/metrics lacks zero502_lb_resent_after_eject_total:\n%s", body)
	return ""
}

// ejectedByChecks fails the test unless the backend at addr left rotation by its checks, and
// says when.
func ejectedByChecks(t *testing.T, l *testLB, addr string) time.Time {
	t.Helper()
	for _, b := range l.Backends() {
		if b.Address != addr {
			continue
		}
		st := b.Status()
		last := st.Transitions[len(st.Transitions)-1]
		if st.State != Unhealthy || !strings.Contains(last.Reason, "consecutive failed checks") {
			t.Fatalf("the cut host: %s, last transition %+v; want unhealthy by its checks", st.State, last)
		}
		return last.At
	}
	t.Fatalf("no backend %s", addr)
	return time.Time{}
}

// A GET waiting on a host that drops off the network is resent to the healthy backend as soon
// as the checks take the host out, long before header_timeout; it is counted once.
func TestGETWaitingOnAnEjectedBackendIsResentAtOnce(t *testing.T) {
	h, a := startCutHost(t, false), startBackend(t, "a")
	set := resendSettings(h, a, 10*time.Second)
	l := startLB(t, set)
	got := cutWhileTwoWait(t, l, h, "GET", "/", "")
	for i, g := range got {
		if g.code != 200 || g.body != "a" || g.took >= set.HeaderTimeout {
			t.Fatalf("GET %d: %d %q after %s; want 200 from a before header_timeout (%s)", i, g.code, g.body, g.took, set.HeaderTimeout)
		}
	}
	ejectedByChecks(t, l, h.addr)
	if n := h.taken.Load(); n != 1 {
		t.Fatalf("the cut host took %d requests, want 1", n)
	}
	if m := resentMetric(t, l); m != "zero502_lb_resent_after_eject_total 1" {
		t.Fatalf("%s, want 1", m)
	}
	if n := l.retries.Load(); n != 0 {
		t.Fatalf("retries %d: a resend is not a retry", n)
	}
	if f := l.Backends()[0].Status().Outcomes.Failures; f.Reset != 1 || f.Timeout != 0 {
		t.Fatalf("the cut host's failures %+v, want the resent attempt as one reset (nothing came back)", f)
	}
}

// A POST with a body keeps today's rule: it waits on the ejected backend until header_timeout
// (504), and is never sent to another.
func TestPOSTWaitingOnAnEjectedBackendIsNotResent(t *testing.T) {
	h, a := startCutHost(t, false), startBackend(t, "a")
	set := resendSettings(h, a, 4*time.Second)
	l := startLB(t, set)
	got := cutWhileTwoWait(t, l, h, "POST", "/orders", `{"key":"k1"}`)
	if got[0].code != 201 || got[1].code != 504 {
		t.Fatalf("POSTs: %d and %d, want 201 (a) and 504 (the cut host, at header_timeout)", got[0].code, got[1].code)
	}
	if at := ejectedByChecks(t, l, h.addr); !at.Before(got[1].at) {
		t.Fatalf("the cut host left rotation at %s, after the 504 (%s): the test proves nothing", at, got[1].at)
	}
	if n := a.posts.Load(); n != 1 {
		t.Fatalf("a executed %d POSTs, want 1: the one sent to the cut host must not be resent", n)
	}
	if m := resentMetric(t, l); m != "zero502_lb_resent_after_eject_total 0" {
		t.Fatalf("%s, want 0", m)
	}
}

// A GET that already got part of its response head is not resent: the bytes may have reached
// the client's side of the story (it waits until header_timeout, then 504, as before).
func TestGETWithPartOfItsAnswerIsNotResent(t *testing.T) {
	h, a := startCutHost(t, true), startBackend(t, "a")
	set := resendSettings(h, a, 4*time.Second)
	l := startLB(t, set)
	got := cutWhileTwoWait(t, l, h, "GET", "/", "")
	if got[0].code != 200 || got[0].body != "a" || got[1].code != 504 {
		t.Fatalf("GETs: %d %q and %d, want 200 from a and 504 (the cut host wrote part of a head)", got[0].code, got[0].body, got[1].code)
	}
	if at := ejectedByChecks(t, l, h.addr); !at.Before(got[1].at) {
		t.Fatalf("the cut host left rotation at %s, after the 504 (%s): the test proves nothing", at, got[1].at)
	}
	if m := resentMetric(t, l); m != "zero502_lb_resent_after_eject_total 0" {
		t.Fatalf("%s, want 0", m)
	}
}

// With no other healthy backend, a GET waiting on the ejected one stays where it is (today's
// rule): nothing is resent, the rotation failing open is no better a place.
func TestGETWaitingOnTheOnlyBackendIsNotResent(t *testing.T) {
	h := startCutHost(t, false)
	set := fastSettings(h.addr)
	set.Interval, set.Timeout, set.UnhealthyThreshold = 300*time.Millisecond, 250*time.Millisecond, 3
	set.HeaderTimeout = 4 * time.Second
	l := startLB(t, set)
	poll.Until(t, 10*time.Second, "the backend in rotation", func() bool { return l.Backends()[0].InRotation() })
	h.cut.Store(true)
	resp, err := client().Get(l.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	answered := time.Now()
	if resp.StatusCode != 504 {
		t.Fatalf("GET: %d, want 504 at header_timeout", resp.StatusCode)
	}
	if at := ejectedByChecks(t, l, h.addr); !at.Before(answered) {
		t.Fatalf("the backend left rotation at %s, after the 504 (%s): the test proves nothing", at, answered)
	}
	if m := resentMetric(t, l); m != "zero502_lb_resent_after_eject_total 0" {
		t.Fatalf("%s, want 0", m)
	}
}
