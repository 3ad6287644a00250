package app

import (
	"strings"
	"testing"
	"time"
)

// POST /orders?ms=N is an order that takes N ms: the load of `zero502 demo` uses it so that a
// deploy meets POSTs in flight (the naive rollout cuts them; the handshake lets them finish).
func TestOrderWithProcessingTimeTakesItAndIsRecordedOnce(t *testing.T) {
	r := serve(t, Options{})
	begin := time.Now()
	resp, _ := r.do(t, "POST", "/orders?ms=120", map[string]string{"Idempotency-Key": "slow-1"})
	if took := time.Since(begin); resp.StatusCode != 201 || took < 120*time.Millisecond {
		t.Fatalf("POST /orders?ms=120: %d after %s, want 201 after at least 120ms", resp.StatusCode, took)
	}
	resp, _ = r.do(t, "POST", "/orders?ms=-5", map[string]string{"Idempotency-Key": "bad"})
	if resp.StatusCode != 400 {
		t.Fatalf("POST /orders?ms=-5: %d, want 400", resp.StatusCode)
	}
	_, body := r.do(t, "GET", "/orders", nil)
	if strings.Count(body, "slow-1") != 1 || strings.Contains(body, `"bad"`) {
		t.Fatalf("orders after one slow and one bad POST: %s", body)
	}
}

// A processing time past the cap is refused however large it is: ms=9223372036855 is past what a
// time.Duration holds in milliseconds, and once multiplied it wrapped to a negative wait that
// passed the cap check, so /slow said it slept 9223372036855 ms at once and the order was
// executed.
func TestProcessingTimesPastTheCapAreRefusedEvenWhenTheyOverflow(t *testing.T) {
	r := serve(t, Options{})
	for _, ms := range []string{"9223372036855", "18446744073710"} {
		if resp, body := r.do(t, "GET", "/slow?ms="+ms, nil); resp.StatusCode != 400 {
			t.Errorf("GET /slow?ms=%s = %d %q, want 400", ms, resp.StatusCode, body)
		}
		if resp, body := r.do(t, "POST", "/orders?ms="+ms, map[string]string{"Idempotency-Key": "huge-" + ms}); resp.StatusCode != 400 {
			t.Errorf("POST /orders?ms=%s = %d %q, want 400", ms, resp.StatusCode, body)
		}
	}
	if _, body := r.do(t, "GET", "/orders", nil); strings.Contains(body, "huge-") {
		t.Fatalf("orders after POSTs with a processing time past the cap: %s, want none executed", body)
	}
}
