package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/fdlimit"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// A connect to a backend that fails for the LB's own lack of descriptors (socket(): EMFILE) is
// not the backend's failure: the client is answered 503, the backend stays in rotation with
// nothing recorded against it, and the next request, once descriptors are free again, is served.
// So a client that fills the LB's descriptor table cannot eject every healthy backend. Both
// engines (ZERO502_TEST_LB_ENGINE).
func TestTheLBsOwnLackOfDescriptorsDoesNotEjectABackend(t *testing.T) {
	b := startBackend(t, "a")
	set := fastSettings(b.addr())
	set.MaxIdlePerBackend = 0  // every request connects afresh
	set.Interval = time.Minute // no health check while the limit is low
	l := startLB(t, set)
	be := l.Backends()[0]
	poll.Until(t, 10*time.Second, "the backend in rotation", be.InRotation)

	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	ask := func() (int, error) {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: lb\r\n\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if got, err := ask(); got != 200 {
		t.Fatalf("first request: %d %v, want 200", got, err)
	}
	poll.Until(t, 10*time.Second, "the client connection parked, idle", func() bool { return parked(l.Server) == 1 })
	restore := fdlimit.Lower(t, 0)
	got, err := ask()
	restore()
	switch {
	case testSlowPathOnly() && err != nil:
		// The parked connection's hand-off to a goroutine needs a descriptor (netConn) and found
		// none: the LB closed it, and never reached the backend.
		t.Logf("request while the LB had no descriptor: %v (its hand-off to a goroutine failed)", err)
	case got != 503:
		t.Errorf("request while the LB had no descriptor to connect with: %d %v, want 503", got, err)
	case l.localShortage.Load() != 1:
		t.Errorf("local connect failures %d, want 1", l.localShortage.Load())
	}
	if !be.InRotation() || l.ejections.Load() != 0 {
		t.Errorf("backend in rotation %v, ejections %d; want kept in rotation, no ejection", be.InRotation(), l.ejections.Load())
	}
	if st := l.Statuses()[0]; st.Outcomes.Failures.Connect != 0 || st.Outcomes.LBAnswers.ServiceUnavailable != 0 {
		t.Errorf("outcomes %+v: the LB's own shortage was recorded against the backend", st.Outcomes)
	}
	if err != nil { // the connection the LB closed
		if c, err = net.Dial("tcp", l.Addr()); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br = bufio.NewReader(c)
	}
	if got, err := ask(); got != 200 {
		t.Errorf("request once descriptors were free: %d %v, want 200", got, err)
	}
}
