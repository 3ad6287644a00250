package lb

import (
	"slices"

	"github.com/zero502/zero502/infra/adminapi"
)

// What the admin API changed goes with an in-place upgrade (SIGHUP, zero502 lb upgrade), as the
// edge's does (adminapi.Handoff): the backends added and removed, the drains and who made them,
// the weights and the maintenance switch. Without it a deploy under way when the LB was upgraded
// lost its drains (a backend being stopped went back into rotation at its first good check) and
// its canary's weight.

// WithInherited starts the LB from h, the admin state handed over by the process this one
// replaces (adminapi.ReadHandoff): the configured backends without those removed there, with
// those added there (placed by their first check, as configured ones are), then its drains, its
// weights and its maintenance switch, all before the first check. A nil h changes nothing.
func WithInherited(h *adminapi.Handoff) Option { return func(s *Server) { s.inherit = h } }

// ReadHandoff reads the admin state at path written by the process parent (adminapi.ReadHandoff,
// with the LB's rule for a backend's address).
func ReadHandoff(path string, parent int) (adminapi.Handoff, bool, error) {
	return adminapi.ReadHandoff(path, parent, checkBackendAddr)
}

// applyInherited applies s.inherit's drains, weights and maintenance (New, once the backends are
// built).
func (s *Server) applyInherited() {
	h := s.inherit
	if h == nil {
		return
	}
	for _, a := range h.Drained {
		_, _ = s.DrainBackend(a, h.DrainerOf(a))
	}
	for a, w := range h.Weights {
		_, _ = s.SetBackendWeight(a, w)
	}
	if h.Maintenance != nil {
		s.SetMaintenance(h.Maintenance)
	}
	s.log.Info("admin state taken over from the process this one replaces", "added", h.Added, "removed", h.Removed,
		"drained", h.Drained, "drained_by", h.DrainedBy, "weights", h.Weights, "maintenance", h.Maintenance != nil)
}

// PrepareHandoff runs as an upgrade attempt starts (handoff.Upgrader.OnUpgrade): from now on the
// admin API refuses writes (503, Retry-After) until HandoffFailed or the end, and the admin
// state is written to path for the new process (adminapi.Gate.Freeze).
func (s *Server) PrepareHandoff(path string) error {
	h, err := s.gate.Freeze(path, s.adminHandoff)
	if err != nil {
		return err
	}
	s.log.Info("admin state handed to the upgrade; admin writes wait for its outcome", "state", path, "added", h.Added,
		"removed", h.Removed, "drained", h.Drained, "drained_by", h.DrainedBy, "weights", h.Weights, "maintenance", h.Maintenance != nil)
	return nil
}

// HandoffFailed ends what PrepareHandoff began when the upgrade failed: this process keeps
// serving, and its admin API takes writes again.
func (s *Server) HandoffFailed() { s.gate.Thaw() }

// adminHandoff is what the admin API changed over the configured backends.
func (s *Server) adminHandoff() adminapi.Handoff {
	var h adminapi.Handoff
	all := s.members.all()
	for _, b := range all {
		if !slices.Contains(s.set.Backends, b.Address) {
			h.Added = append(h.Added, b.Address)
		}
		if st := b.Status(); st.AdminDrained {
			h.Drained = append(h.Drained, b.Address)
			if h.DrainedBy == nil {
				h.DrainedBy = map[string]string{}
			}
			h.DrainedBy[b.Address] = st.DrainedBy
		}
		if w := b.Weight(); w != adminapi.DefaultWeight {
			if h.Weights == nil {
				h.Weights = map[string]int{}
			}
			h.Weights[b.Address] = w
		}
	}
	for _, a := range s.set.Backends {
		if !slices.ContainsFunc(all, func(b *Backend) bool { return b.Address == a }) {
			h.Removed = append(h.Removed, a)
		}
	}
	if m := s.Maintenance(); m.On {
		h.Maintenance = &adminapi.MaintenanceChange{Message: m.Message, RetryAfter: m.RetryAfter}
	}
	return h
}
