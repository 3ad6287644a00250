package lb

import (
	"sync"
	"sync/atomic"
)

// rotation is smooth weighted round robin over the healthy backends: each gets new requests in
// proportion to its weight (Backend.Weight; all DefaultWeight at first), spread evenly over
// the cycle, and with equal weights it is strict round robin: 30 sequential requests over three
// backends give 10/10/10 in order. The in-rotation list and its weighted order are an immutable
// snapshot swapped atomically on every state or weight change, and the position is one atomic
// counter, so concurrent requests never skew the split and a pick takes no lock.
//
// When no backend is healthy, the rotation fails open: it goes round the backends that left by
// failed checks after they had served (standing.FailsOpen), rather than answer 503 to every
// request while, most often, a stalled host or network failed every check at once. A draining
// backend, one the admin API holds and one that never passed a check stay out.
type rotation struct {
	mu   sync.Mutex // serialises rebuilds: an older snapshot never replaces a newer one
	all  []*Backend // under mu: the current backend set
	next atomic.Uint64
	cur  atomic.Pointer[snapshot]
}

// snapshot is the list pick goes round: the healthy backends, or when there are none, the
// fail-open ones (failOpen), with their weights' order.
type snapshot struct {
	list     []*Backend
	failOpen bool
	// order is one cycle of the weighted rotation, positions in list (smoothOrder); nil when
	// every weight is the same, which is plain rotation over list.
	order []int32
}

// takes reports whether b may still take a request from this snapshot (its state may have
// changed since the snapshot was built).
func (sn *snapshot) takes(b *Backend) bool {
	if sn.failOpen {
		return b.FailsOpen()
	}
	return b.InRotation()
}

func newRotation(all []*Backend) *rotation {
	r := &rotation{all: all}
	r.rebuild()
	return r
}

// rebuild recomputes the in-rotation snapshot from each backend's state.
func (r *rotation) rebuild() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rebuildLocked()
}

// replace makes all the backend set (after an admin change) and rebuilds the snapshot.
func (r *rotation) replace(all []*Backend) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = all
	r.rebuildLocked()
}

func (r *rotation) rebuildLocked() {
	sn := &snapshot{list: make([]*Backend, 0, len(r.all))}
	for _, b := range r.all {
		if b.InRotation() {
			sn.list = append(sn.list, b)
		}
	}
	if len(sn.list) == 0 {
		sn.failOpen = true
		for _, b := range r.all {
			if b.FailsOpen() {
				sn.list = append(sn.list, b)
			}
		}
	}
	weights := make([]int, len(sn.list))
	for i, b := range sn.list {
		weights[i] = b.Weight()
	}
	sn.order = smoothOrder(weights)
	r.cur.Store(sn)
}

// smoothOrder is one cycle of smooth weighted round robin (nginx's) over weights, as positions
// in weights: every step adds each weight to its current value, picks the largest current (the
// first of equals) and takes the sum of the weights off the one picked. Each position appears
// weight/g times in a cycle of sum/g steps (g the weights' greatest common divisor), spread as
// evenly as the weights allow, and the cycle repeats exactly: after it every current is 0
// again. It is nil when every weight is the same (plain rotation). It costs a cycle's steps
// times len(weights), on a rebuild only: at most 1000·n² for n backends.
func smoothOrder(weights []int) []int32 {
	if len(weights) < 2 {
		return nil
	}
	g := weights[0]
	equal := true
	for _, w := range weights[1:] {
		g = gcd(g, w)
		equal = equal && w == weights[0]
	}
	if equal {
		return nil
	}
	step := make([]int, len(weights))
	total := 0
	for i, w := range weights {
		step[i] = w / g
		total += step[i]
	}
	current := make([]int, len(weights))
	order := make([]int32, total)
	for k := range order {
		best := 0
		for i, w := range step {
			current[i] += w
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		order[k] = int32(best)
	}
	return order
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// failingOpen reports whether no backend is healthy and some fail open.
func (r *rotation) failingOpen() bool {
	sn := r.cur.Load()
	return sn.failOpen && len(sn.list) > 0
}

// tried is the set of backends one request has already used.
type tried struct {
	small uint64
	large map[int]bool
}

func (t *tried) add(b *Backend) {
	if b.index < 64 {
		t.small |= 1 << b.index
		return
	}
	if t.large == nil {
		t.large = map[int]bool{}
	}
	t.large[b.index] = true
}

func (t *tried) has(b *Backend) bool {
	if b.index < 64 {
		return t.small&(1<<b.index) != 0
	}
	return t.large[b.index]
}

// pick returns the next backend of the snapshot not yet tried (a healthy one, or while failing
// open a fail-open one), or nil when none is left. The weighted order names the candidate; when
// that one was tried or has just left, the others follow in list order whatever their weights,
// so a retry goes to another backend even when its weight is small. It is both engines' one
// selection (proxy.go, the event loops' pick) and allocates nothing.
func (r *rotation) pick(t *tried) *Backend {
	sn := r.cur.Load()
	h := sn.list
	if len(h) == 0 {
		return nil
	}
	n := r.next.Add(1) - 1
	if sn.order != nil {
		n = uint64(sn.order[n%uint64(len(sn.order))])
	}
	for i := 0; i < len(h); i++ {
		b := h[(n+uint64(i))%uint64(len(h))]
		if !t.has(b) && sn.takes(b) {
			return b
		}
	}
	return nil
}

// healthyLeft reports whether a backend in rotation that t has not tried is left (none while
// the rotation fails open): where a request waiting on an ejected backend may be resent
// (resendNow). Like pick, it takes no lock and allocates nothing.
func (r *rotation) healthyLeft(t *tried) bool {
	sn := r.cur.Load()
	if sn.failOpen {
		return false
	}
	for _, b := range sn.list {
		if !t.has(b) && b.InRotation() {
			return true
		}
	}
	return false
}
