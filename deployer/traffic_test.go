package deployer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// traffic is a small steady load through the LB: GETs and POST /orders with unique
// Idempotency-Keys on keep-alive connections; every answer that is not 200/201 is a failure.
type traffic struct {
	ok       atomic.Int64
	mu       sync.Mutex
	failures []string
	acked    []string
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startTraffic(t *testing.T, addr string, workers int) *traffic {
	return startTrafficWith(t, "http://"+addr, &http.Transport{MaxIdleConnsPerHost: workers}, workers)
}

// startTrafficWith is startTraffic to base (scheme and authority) through transport.
func startTrafficWith(t *testing.T, base string, transport *http.Transport, workers int) *traffic {
	tr := &traffic{stop: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	for w := range workers {
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-tr.stop:
					return
				case <-time.After(15 * time.Millisecond):
				}
				key := ""
				req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
				if n%2 == 1 {
					key = fmt.Sprintf("w%d-n%d", w, n)
					req, _ = http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(`{"item":1}`))
					req.Header.Set("Idempotency-Key", key)
				}
				resp, err := client.Do(req)
				if err != nil {
					tr.fail(fmt.Sprintf("%s %s: %v", req.Method, req.URL.Path, err))
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 && resp.StatusCode != 201 {
					tr.fail(fmt.Sprintf("%s %s: %s", req.Method, req.URL.Path, resp.Status))
					continue
				}
				tr.ok.Add(1)
				if key != "" {
					tr.mu.Lock()
					tr.acked = append(tr.acked, key)
					tr.mu.Unlock()
				}
			}
		}()
	}
	t.Cleanup(tr.end)
	return tr
}

func (tr *traffic) fail(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.failures = append(tr.failures, s)
}

func (tr *traffic) end() {
	select {
	case <-tr.stop:
	default:
		close(tr.stop)
	}
	tr.wg.Wait()
}

// requireClean ends the load and fails the test if any request failed or went nowhere.
func (tr *traffic) requireClean(t *testing.T) {
	t.Helper()
	tr.end()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.failures) > 0 {
		t.Errorf("%d of %d requests failed, first: %s", len(tr.failures), int(tr.ok.Load())+len(tr.failures),
			strings.Join(tr.failures[:min(5, len(tr.failures))], "; "))
	}
	if tr.ok.Load() < 20 {
		t.Errorf("only %d requests succeeded: the load did not run", tr.ok.Load())
	}
}

// readOrders returns how many times each Idempotency-Key was executed, across every instance.
func readOrders(t *testing.T, path string) map[string]int {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var o struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("orders log line %q: %v", sc.Text(), err)
		}
		seen[o.Key]++
	}
	return seen
}
