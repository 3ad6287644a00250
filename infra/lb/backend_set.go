package lb

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zero502/zero502/infra/adminapi"
)

// backendSet is the LB's current backends in order: the configured ones, then those the admin
// API added. The list is an immutable snapshot swapped atomically on every change, so the
// forwarding paths, the admin views and the metrics read it without a lock; changes are serial
// (mu). A removed backend's index is given to the next one added, so the per-request tried set
// stays a bitmask; the event loops' pools therefore check which backend a pooled connection
// belongs to, not only its index.
type backendSet struct {
	mu     sync.Mutex // serialises changes and the start of health checks
	list   atomic.Pointer[[]*Backend]
	checks context.Context // the health checks' context once Run started; nil before (under mu)
}

func newBackendSet(all []*Backend) *backendSet {
	bs := &backendSet{}
	bs.list.Store(&all)
	return bs
}

// all is the current snapshot; callers must not modify it.
func (bs *backendSet) all() []*Backend { return *bs.list.Load() }

// find is the backend with address addr, or nil.
func (bs *backendSet) find(addr string) *Backend {
	for _, b := range bs.all() {
		if b.Address == addr {
			return b
		}
	}
	return nil
}

// freeIndexLocked is the lowest index no current backend uses.
func (bs *backendSet) freeIndexLocked() int {
	used := make([]bool, len(bs.all())+1)
	for _, b := range bs.all() {
		if b.index < len(used) {
			used[b.index] = true
		}
	}
	return slices.Index(used, false)
}

// storeLocked publishes a new list: a fresh slice, never one a reader may hold.
func (bs *backendSet) storeLocked(all []*Backend) { bs.list.Store(&all) }

// Errors of the admin write API; the HTTP layer maps them to 404 and 409.
var (
	// ErrUnknownBackend: no backend has this address.
	ErrUnknownBackend = fmt.Errorf("%w (GET /admin/backends lists them)", adminapi.ErrUnknownTarget)
	// ErrInRotation: a backend must be drained before it is removed.
	ErrInRotation = fmt.Errorf("backend is %w", adminapi.ErrInRotation)
)

// checkBackendAddr is the rule for a backend address, from the config or the admin API:
// host:port with a port from 1 to 65535.
func checkBackendAddr(addr string) error {
	if err := checkHostPort(addr); err != nil {
		return fmt.Errorf("backend %q: %s", addr, err)
	}
	if _, p, _ := net.SplitHostPort(addr); p == "0" {
		return fmt.Errorf("backend %q: port must be from 1 to 65535", addr)
	}
	return nil
}
