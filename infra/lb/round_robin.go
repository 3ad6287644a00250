package lb

import (
	"sync"
	"sync/atomic"
)

// rotation is strict round robin over the healthy backends. The in-rotation list is an
// immutable snapshot swapped atomically on every state change, and the position is one atomic
// counter, so concurrent requests never skew the split: 30 sequential requests over three
// backends give 10/10/10 in order.
type rotation struct {
	mu      sync.Mutex // serialises rebuilds: an older snapshot never replaces a newer one
	all     []*Backend // under mu: the current backend set
	next    atomic.Uint64
	healthy atomic.Pointer[[]*Backend]
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
	h := make([]*Backend, 0, len(r.all))
	for _, b := range r.all {
		if b.InRotation() {
			h = append(h, b)
		}
	}
	r.healthy.Store(&h)
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

// pick returns the next healthy backend not yet tried, or nil when none is left.
func (r *rotation) pick(t *tried) *Backend {
	h := *r.healthy.Load()
	if len(h) == 0 {
		return nil
	}
	n := r.next.Add(1) - 1
	for i := 0; i < len(h); i++ {
		b := h[(n+uint64(i))%uint64(len(h))]
		if !t.has(b) && b.InRotation() {
			return b
		}
	}
	return nil
}
