package edge

import (
	"slices"

	"github.com/zero502/zero502/infra/adminapi"
)

// An in-place upgrade (infra/handoff: SIGHUP, or zero502 lb upgrade) hands the edge's listening
// sockets to a new process of the same command. Three things make the hand-off clean:
//
//   - What the admin API changed (upstreams drained, added, removed) goes with it: as the attempt
//     starts, the old process stops taking admin writes (503 with Retry-After until the attempt
//     ends) and writes its AdminState to a file beside the pid file (0600, atomically); the new
//     process reads it before it reports ready and applies it over the configured origins, so a
//     reload of the config still takes effect.
//   - Once the new process is ready the old one closes its admin and metrics listeners at once:
//     the new process shares those sockets, and every request lands on it.
//   - The old edge stops accepting at once (a drain window of none: drainPhases.begin) and gives
//     the connections it holds the shutdown budget: the drain window exists to leave the DNS A
//     set, and after a hand-off the successor already serves the address (with EPOLLEXCLUSIVE an
//     old process still accepting would win nearly every connection, with the old config).

// ReadHandoff reads the admin state at path written by the process parent (adminapi.ReadHandoff,
// with the edge's rule for an upstream's address).
func ReadHandoff(path string, parent int) (adminapi.Handoff, bool, error) {
	return adminapi.ReadHandoff(path, parent, func(a string) error { return checkDial("origin", a) })
}

// PrepareHandoff runs as an upgrade attempt starts (handoff.Upgrader.OnUpgrade): from now on the
// admin API refuses writes (503, Retry-After) until HandoffFailed or the end, and the admin
// state is written to path, only the owner's (0600), atomically, for the new process to read
// (ReadHandoff, then Inherit).
func (f *Forwarder) PrepareHandoff(path string) error {
	st, err := f.gate.Freeze(path, f.adminState)
	if err != nil {
		return err
	}
	logger(f.Logger).Info("edge: admin state handed to the upgrade; admin writes wait for its outcome", "state", path,
		"added", st.Added, "removed", st.Removed, "drained", st.Drained, "drained_by", st.DrainedBy)
	return nil
}

// HandoffFailed ends what PrepareHandoff began when the upgrade failed: this process keeps
// serving, and its admin API takes writes again.
func (f *Forwarder) HandoffFailed() { f.gate.Thaw() }

// adminState is the admin API's changes over the configured origins.
func (f *Forwarder) adminState() adminapi.Handoff {
	var st adminapi.Handoff
	all := f.ups.all()
	for _, u := range all {
		if !slices.Contains(f.Origins, u.addr) {
			st.Added = append(st.Added, u.addr)
		}
		if s := u.status(); s.AdminDrained {
			st.Drained = append(st.Drained, u.addr)
			if st.DrainedBy == nil {
				st.DrainedBy = map[string]string{}
			}
			st.DrainedBy[u.addr] = s.DrainedBy
		}
	}
	for _, o := range f.Origins {
		if !slices.ContainsFunc(all, func(u *upstream) bool { return u.addr == o }) {
			st.Removed = append(st.Removed, o)
		}
	}
	return st
}

// handedOff reports whether Serve's context ended for a hand-off to an upgraded process.
func (f *Forwarder) handedOff() bool { return f.HandedOff != nil && f.HandedOff() }
