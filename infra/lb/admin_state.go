package lb

import (
	"fmt"
	"time"
)

// The backend state changes the admin API makes, beside the health checks' (record, eject).

// adminDrain holds b drained: state draining, out of rotation, whatever its health checks say.
// Draining one already held drained changes nothing.
func (b *Backend) adminDrain(now time.Time) (Transition, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.adminDrained {
		return Transition{}, false
	}
	b.adminDrained = true
	return b.moveLocked(Draining, now, reasonAdmin), true
}

// undrain releases an admin drain: b joins, out of rotation until healthy threshold health
// checks pass from now on. Checks from before are not counted: behind an undrain there is
// usually a new process on the same address (a stop-first deploy of a service drained at the
// balancer), and the old one's answers say nothing of it. A backend not held drained is left as
// it is.
func (b *Backend) undrain(now time.Time) (Transition, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.adminDrained {
		return Transition{}, false
	}
	b.adminDrained = false
	b.successes = 0
	return b.moveLocked(Joining, now, reasonAdmin), true
}

// markRemoved takes b out of the state machine for good, unless it is still in rotation; from
// is its last state.
func (b *Backend) markRemoved() (from State, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Healthy {
		return b.state, fmt.Errorf("%w: drain it first (POST /admin/backends/%s/drain), then remove it once its in_flight is 0", ErrInRotation, b.Address)
	}
	b.removed = true
	return b.state, nil
}
