package edge_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/edge"
	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/lbinproc"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// TestDrainingLBInstanceLeavesTheEdgeWithZeroFailures runs two real in-house LB instances
// (lb.Server, accepting PROXY from loopback) behind one edge with an HTTP check of /_lb/health,
// and steady HTTP load through the edge on new connections. One LB instance drains (the
// SIGTERM path: its context ends, /_lb/health answers 503 for the drain window while it still
// proxies, then it stops): the edge's check takes it out of rotation, new connections go to the
// other instance, and not one request fails.
func TestDrainingLBInstanceLeavesTheEdgeWithZeroFailures(t *testing.T) {
	backends := []string{httpBackend(t), httpBackend(t)}
	lbA, stopA, doneA := startLB(t, backends)
	lbB, stopB, _ := startLB(t, backends)
	defer stopB()

	fwd := &edge.Forwarder{Listen: "127.0.0.1:0", Origins: []string{lbA.Addr(), lbB.Addr()}, Shutdown: time.Second,
		// Checks loose enough for a loaded test machine: a timed-out check of the healthy instance
		// must not take it out.
		Check: edge.UpstreamCheck{Path: "/_lb/health", Interval: 200 * time.Millisecond, Timeout: 150 * time.Millisecond, UnhealthyThreshold: 3}}
	edge.ForTests(fwd)
	if err := fwd.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- fwd.Serve(ctx) }()
	defer func() { cancel(); <-served }()

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				resp, err := client.Get("http://" + fwd.Addr().String() + "/work")
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = errors.New(resp.Status)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	poll.Until(t, 20*time.Second, "load through both instances", func() bool { return requests(lbA) > 5 && requests(lbB) > 5 })

	stopA() // SIGTERM: /_lb/health 503 for the drain window, still proxying
	poll.Until(t, 20*time.Second, "the edge to take the draining instance out", func() bool {
		st := upstream(fwd, lbA.Addr())
		return st.State == adminapi.Draining && !st.InRotation
	})
	t.Logf("instance A out of the edge's rotation: %+v", upstream(fwd, lbA.Addr()).Transitions)
	poll.Until(t, 20*time.Second, "instance A to finish its drain and stop", func() bool {
		select {
		case err := <-doneA:
			if err != nil {
				t.Errorf("instance A: Run = %v", err)
			}
			return true
		default:
			return false
		}
	})
	beforeB := requests(lbB)
	poll.Until(t, 20*time.Second, "more load through B after A stopped", func() bool { return requests(lbB) > beforeB+20 })
	close(stopLoad)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d requests failed through the edge while an LB instance drained; first: %v", n, n+ok.Load(), firstErr.Load())
	}
	t.Logf("%d requests, 0 failed", ok.Load())
}

func upstream(f *edge.Forwarder, addr string) adminapi.BackendStatus {
	for _, st := range f.Upstreams() {
		if st.Address == addr {
			return st
		}
	}
	return adminapi.BackendStatus{}
}

// requests is how many responses the instance has relayed from its backends.
func requests(s *lb.Server) uint64 {
	var n uint64
	for _, st := range s.Statuses() {
		for _, c := range st.Requests {
			n += c
		}
	}
	return n
}

func startLB(t *testing.T, backends []string) (*lb.Server, func(), <-chan error) {
	t.Helper()
	set := lb.LabSettings("127.0.0.1:0", backends)
	set.Interval, set.Timeout = 100*time.Millisecond, 80*time.Millisecond
	set.AcceptProxyFrom = []string{"127.0.0.0/8"}
	set.Drain, set.Shutdown = 3*time.Second, 2*time.Second
	l := lbinproc.Start(t, set)
	return l.Server, l.Stop, l.Done
}

func httpBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}
