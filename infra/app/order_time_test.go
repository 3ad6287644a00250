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
