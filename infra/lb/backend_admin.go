package lb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/standing"
)

// reasonAdmin is the reason of every transition the admin API makes.
const reasonAdmin = standing.ReasonAdmin

// Admin actions, the action label of zero502_lb_admin_changes_total.
const (
	actionAdd     = "add"
	actionUndrain = "undrain"
	actionDrain   = "drain"
	actionRemove  = "remove"
	actionWeight  = "weight"

	actionMaintenanceOn  = "maintenance_on"
	actionMaintenanceOff = "maintenance_off"
)

// startChecks starts the health checks of every current backend under ctx, and of every one
// added later.
func (s *Server) startChecks(ctx context.Context) {
	s.members.mu.Lock()
	defer s.members.mu.Unlock()
	s.members.checks = ctx
	for _, b := range s.members.all() {
		s.startCheckLocked(b)
	}
}

// startCheckLocked runs b's health checks until b is removed or the checks' context ends.
func (s *Server) startCheckLocked(b *Backend) {
	if s.members.checks == nil {
		return // Run starts them
	}
	ctx, cancel := context.WithCancel(s.members.checks)
	b.stopChecks = cancel
	go s.check.run(ctx, b)
}

// AddBackend puts addr in the set, out of rotation until healthy_threshold consecutive good
// health checks (created is true), or undrains a backend the admin API drained: it joins like a
// new one, back in rotation after healthy_threshold checks from now on.
// Any other known backend is left as it is.
func (s *Server) AddBackend(addr string) (st BackendStatus, created bool, err error) {
	if err := checkBackendAddr(addr); err != nil {
		return BackendStatus{}, false, err
	}
	s.members.mu.Lock()
	defer s.members.mu.Unlock()
	if b := s.members.find(addr); b != nil {
		if t, ok := b.Undrain(s.clock.Now()); ok {
			s.adminChanged(b, actionUndrain, t)
		}
		return b.Status(), false, nil
	}
	b := newJoiningBackend(addr, s.members.freeIndexLocked(), s.clock.Now())
	b.pool.max = s.set.MaxIdlePerBackend
	s.metrics.attach(b)
	all := append(append(make([]*Backend, 0, len(s.members.all())+1), s.members.all()...), b)
	s.members.storeLocked(all)
	s.rot.replace(all)
	s.startCheckLocked(b)
	s.adminChanged(b, actionAdd, b.Status().Transitions[0])
	return b.Status(), true, nil
}

// BackendStatus is addr's admin view (GET /admin/backends/{addr}): one target's state without
// the whole list, what a deploy polls while it waits for rotation.
func (s *Server) BackendStatus(addr string) (BackendStatus, error) {
	s.members.mu.Lock()
	b := s.members.find(addr)
	s.members.mu.Unlock()
	if b == nil {
		return BackendStatus{}, fmt.Errorf("%s: %w", addr, ErrUnknownBackend)
	}
	return b.Status(), nil
}

// DrainBackend takes addr out of rotation at once and keeps it out (health checks do not bring
// it back) until AddBackend undrains it: no new requests, in-flight ones finish, idle pooled
// connections to it are closed (on both paths; busy ones as they go idle). by is who drains
// (adminapi.DrainedBy), reported as drained_by.
func (s *Server) DrainBackend(addr, by string) (BackendStatus, error) {
	if err := checkBackendAddr(addr); err != nil {
		return BackendStatus{}, err
	}
	s.members.mu.Lock()
	defer s.members.mu.Unlock()
	b := s.members.find(addr)
	if b == nil {
		return BackendStatus{}, fmt.Errorf("drain %s: %w", addr, ErrUnknownBackend)
	}
	if t, ok := b.AdminDrain(s.clock.Now(), by); ok {
		s.adminChanged(b, actionDrain, t)
	}
	return b.Status(), nil
}

// RemoveBackend forgets addr, which must be out of rotation (drain it first): its health
// checks stop, requests in flight to it finish normally, its idle pooled connections close.
func (s *Server) RemoveBackend(addr string) error {
	if err := checkBackendAddr(addr); err != nil {
		return err
	}
	s.members.mu.Lock()
	defer s.members.mu.Unlock()
	b := s.members.find(addr)
	if b == nil {
		return fmt.Errorf("remove %s: %w", addr, ErrUnknownBackend)
	}
	from, err := b.MarkRemoved()
	if errors.Is(err, standing.ErrInRotation) {
		return fmt.Errorf("remove %s: %w: drain it first (POST /admin/backends/%s/drain), then remove it once its in_flight is 0", addr, ErrInRotation, addr)
	}
	all := make([]*Backend, 0, len(s.members.all()))
	for _, o := range s.members.all() {
		if o != b {
			all = append(all, o)
		}
	}
	s.members.storeLocked(all)
	s.rot.replace(all)
	if b.stopChecks != nil {
		b.stopChecks()
	}
	b.pool.evict(time.Time{}, 0)
	if s.loops != nil {
		s.loops.wakeAll() // the loops close their idle connections to it
	}
	s.metrics.detach(b)
	s.metrics.admin(actionRemove)
	s.log.Info("backend removed", "backend", addr, "from", string(from), "to", "removed", "reason", reasonAdmin,
		"in_flight", b.inFlight.Load())
	return nil
}

// SetBackendWeight gives addr weight (adminapi.MinWeight to MaxWeight): its share of new
// requests relative to the other backends in rotation, from the next pick on, on both paths.
// The weight stays through every state change (drain, ejection, undrain) until it is set
// again or the backend is removed; the same weight again changes nothing. Requests in flight
// and the health checks are not touched.
func (s *Server) SetBackendWeight(addr string, weight int) (BackendStatus, error) {
	if err := checkBackendAddr(addr); err != nil {
		return BackendStatus{}, err
	}
	if err := adminapi.CheckWeight(weight); err != nil {
		return BackendStatus{}, fmt.Errorf("backend %s: %w", addr, err)
	}
	s.members.mu.Lock()
	defer s.members.mu.Unlock()
	b := s.members.find(addr)
	if b == nil {
		return BackendStatus{}, fmt.Errorf("weight %s: %w", addr, ErrUnknownBackend)
	}
	if from := b.weight.Swap(int32(weight)); int(from) != weight {
		s.rot.rebuild()
		s.metrics.admin(actionWeight)
		s.log.Info("backend weight changed", "backend", addr, "from", from, "to", weight, "reason", reasonAdmin,
			"state", string(b.State()))
	}
	return b.Status(), nil
}

// adminChanged applies, counts and logs a transition the admin API made.
func (s *Server) adminChanged(b *Backend, action string, t Transition) {
	s.metrics.admin(action)
	s.changed(b, t)
}
