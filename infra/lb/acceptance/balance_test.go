package acceptance

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// The lab's distribution checks: 30 sequential requests go 10/10/10 strictly in turn; 300 from
// ten concurrent clients stay within ±20 % per backend.

func TestRoundRobinIsStrict(t *testing.T) {
	t.Parallel()
	l := startLB(t, threeBackends(t), calm...)
	names := l.sequence(t, 30)
	for name, n := range tally(names) {
		if n != 10 {
			t.Fatalf("backend %q got %d of 30, want 10 each: %v", name, n, names)
		}
	}
	if len(tally(names[:3])) != 3 {
		t.Fatalf("the first three requests did not visit three backends: %v", names)
	}
	for i := 3; i < len(names); i++ {
		if names[i] != names[i-3] {
			t.Fatalf("request %d went to %q, not %q as strict rotation requires: %v", i+1, names[i], names[i-3], names)
		}
	}
}

func TestRoundRobinIsFairUnderConcurrency(t *testing.T) {
	t.Parallel()
	l := startLB(t, threeBackends(t), calm...)
	const clients, each = 10, 30
	var (
		mu    sync.Mutex
		names []string
		errs  []error
		wg    sync.WaitGroup
	)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				resp, body, err := l.get("/")
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case resp.StatusCode != http.StatusOK:
					errs = append(errs, fmt.Errorf("status %d: %q", resp.StatusCode, body))
				default:
					names = append(names, resp.Header.Get("X-Backend"))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d requests failed, first: %v", len(errs), clients*each, errs[0])
	}
	counts := tally(names)
	if len(counts) != 3 {
		t.Fatalf("requests reached %d backends, want 3: %v", len(counts), counts)
	}
	for name, n := range counts {
		if n < 80 || n > 120 {
			t.Errorf("backend %q got %d of 300, want 100 ± 20 %%: %v", name, n, counts)
		}
	}
	t.Logf("300 concurrent requests: %v", counts)
}
