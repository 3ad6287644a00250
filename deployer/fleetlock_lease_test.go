package deployer

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// The fleet lock on a lock host is a lease: `zero502 host fleet-lock` holds it while its
// deployer's renewals come (and its session lives), and frees it once rollout.lock_lease passes
// with none (a deployer cut off by a silent partition, its session never closed), saying so.
func TestTheFleetLockIsALeaseTheDeployerRenews(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	dir := t.TempDir()
	cfg.Hosts = []config.Host{{Name: "host-a", StateDir: dir}}
	cfg.Rollout.LockLease = time.Second
	path := cfg.FleetLockPath()
	if filepath.Dir(path) != dir {
		t.Fatalf("the fleet lock %s is not in host-a's state dir %s", path, dir)
	}
	held := func() bool {
		l, err := hostlock.TryAcquire(path, Holder("test"))
		if err == nil {
			l.Release()
			return false
		}
		if !errors.Is(err, hostlock.ErrHeld) {
			t.Fatal(err)
		}
		return true
	}
	type hold struct {
		mu    sync.Mutex
		lines []FleetLockLine
		done  chan error
	}
	start := func(renewals io.Reader) *hold {
		h := &hold{done: make(chan error, 1)}
		go func() {
			h.done <- HoldFleetLock(context.Background(), cfg, "host-a", Holder("deployer"), true, 0, renewals, func(l FleetLockLine) {
				h.mu.Lock()
				h.lines = append(h.lines, l)
				h.mu.Unlock()
			})
		}()
		poll.Until(t, 10*time.Second, "the lock taken", func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return len(h.lines) > 0 && h.lines[0].Locked == path
		})
		return h
	}

	t.Run("renewed, it outlives its lease; the session's end frees it", func(t *testing.T) {
		r, w := io.Pipe()
		h := start(r)
		stop := make(chan struct{})
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					_ = w.Close()
					return
				case <-tick.C:
					_, _ = io.WriteString(w, leaseRenewal+"\n")
				}
			}
		}()
		time.Sleep(3 * cfg.Rollout.LockLease) // three leases long: only the renewals keep it
		if !held() {
			t.Fatalf("the lock was freed while its deployer renewed it: %+v", h.lines)
		}
		close(stop)
		if err := <-h.done; err != nil {
			t.Fatalf("the session ended: %v, want nil (released)", err)
		}
		if held() {
			t.Fatal("still held after the session ended")
		}
	})

	t.Run("not renewed, it is freed when the lease ends, and says so", func(t *testing.T) {
		r, w := io.Pipe() // a session that stays open, silent: the partition
		defer w.Close()
		h := start(r)
		var err error
		select {
		case err = <-h.done:
		case <-time.After(30 * time.Second):
			t.Fatal("the lock is still held 30s into a 1s lease with no renewal")
		}
		if err == nil || !strings.Contains(err.Error(), "no renewal from its deployer for rollout.lock_lease 1s") {
			t.Fatalf("the hold ended with %v; want the lease named", err)
		}
		if held() {
			t.Fatal("the lock is still held after its lease ended")
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if last := h.lines[len(h.lines)-1]; !strings.Contains(last.Expired, "the lock is freed for the next deploy") {
			t.Errorf("the last line %+v; want expired", last)
		}
	})
}
