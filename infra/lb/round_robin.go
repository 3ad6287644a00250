package lb

import (
	"sync"
	"sync/atomic"
)

// rotation is strict round robin over the healthy backends. The in-rotation list is an
// immutable snapshot swapped atomically on every state change, and the position is one atomic
// counter, so concurrent requests never skew the split: 30 sequential requests over three
// backends give 10/10/10 in order.
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
// fail-open ones (failOpen).
type snapshot struct {
	list     []*Backend
	failOpen bool
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
	r.cur.Store(sn)
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
// open a fail-open one), or nil when none is left.
func (r *rotation) pick(t *tried) *Backend {
	sn := r.cur.Load()
	h := sn.list
	if len(h) == 0 {
		return nil
	}
	n := r.next.Add(1) - 1
	for i := 0; i < len(h); i++ {
		b := h[(n+uint64(i))%uint64(len(h))]
		if !t.has(b) && sn.takes(b) {
			return b
		}
	}
	return nil
}
