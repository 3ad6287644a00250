package lb

import (
	"sync"
	"time"
)

// The resend budget. A resend after an ejection (resend.go) is cheap when one backend drops
// off the network: its few waiting requests go to the others. It is not when every backend
// flaps at once (a starved machine whose checks all time out): each ejection would resend its
// requests to the next backend to be ejected, and the LB would multiply its own load just when
// the backends can least take it. So resends draw on a budget, as Finagle's and Envoy's retries
// do: over the last resendWindow, at most resendShare of the requests sent, plus resendFloor
// per second of the window (an LB with little traffic may still resend its few). A resend the
// budget refuses waits where it is, as it would without the resend (counted in
// zero502_lb_resends_over_budget_total).
const (
	resendWindow = 10 * time.Second
	resendShare  = 0.2
	resendFloor  = 10
)

// resendBudget counts, per second of the window, the requests sent (deposits) and the resends
// taken (withdrawals).
type resendBudget struct {
	window time.Duration
	share  float64
	floor  float64 // per second of the window

	mu    sync.Mutex
	slots []budgetSlot // one per second of the window, by Unix second modulo its length
}

type budgetSlot struct {
	sec               int64
	requests, resends int64
}

func newResendBudget(window time.Duration, share, floor float64) *resendBudget {
	n := max(int(window/time.Second), 1)
	return &resendBudget{window: time.Duration(n) * time.Second, share: share, floor: floor, slots: make([]budgetSlot, n)}
}

// slot is the slot of the second of now, emptied when it last held an older second.
func (b *resendBudget) slot(now time.Time) *budgetSlot {
	sec := now.Unix()
	s := &b.slots[int(sec%int64(len(b.slots)))]
	if s.sec != sec {
		*s = budgetSlot{sec: sec}
	}
	return s
}

// deposit counts a request sent to a backend for the first time.
func (b *resendBudget) deposit(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slot(now).requests++
}

// withdraw takes one resend from the budget, or says it is spent.
func (b *resendBudget) withdraw(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	var requests, resends int64
	oldest := now.Unix() - int64(len(b.slots)) + 1
	for _, s := range b.slots {
		if s.sec >= oldest && s.sec <= now.Unix() {
			requests += s.requests
			resends += s.resends
		}
	}
	allowed := b.floor*float64(len(b.slots)) + b.share*float64(requests)
	if float64(resends)+1 > allowed {
		return false
	}
	b.slot(now).resends++
	return true
}
