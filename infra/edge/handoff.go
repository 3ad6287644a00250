package edge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
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

// AdminState is what the admin API changed in an edge's upstreams with respect to its configured
// origins, handed from a process to the one an upgrade starts.
type AdminState struct {
	// PID is the process that wrote it: the new process takes only its parent's.
	PID int `json:"pid"`
	// Added are upstreams the admin API added, not among the configured origins.
	Added []string `json:"added,omitempty"`
	// Removed are configured origins the admin API removed.
	Removed []string `json:"removed,omitempty"`
	// Drained are upstreams the admin API holds drained (POST .../drain, not undrained since).
	Drained []string `json:"drained,omitempty"`
	// DrainedBy is who drained each of Drained (the drain's ?by=, adminapi.DrainedBy), by
	// address. A drained upstream missing here (a file of an earlier version) is taken as
	// adminapi.DrainedByAdmin's; an earlier version reading this file ignores it and takes
	// Drained alone.
	DrainedBy map[string]string `json:"drained_by,omitempty"`
}

// errUpgrading refuses an admin write while an upgrade attempt is under way.
var errUpgrading = errors.New("an upgrade of this edge is under way: its admin state is being handed to the new process; retry in a second")

// ReadAdminState reads the AdminState at path written by the process parent (the one that
// started this one by an upgrade). ok is false, without an error, when there is none: no file
// (the parent recorded none: no admin API, or a version that did not), or one another process
// wrote (a stale one).
func ReadAdminState(path string, parent int) (st AdminState, ok bool, err error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	// Its upstreams get traffic: only a file the edge's own user (or root) wrote, and no one else
	// may read or change (a pid file may sit in a sticky directory others can write to).
	if err := trust.CheckPrivate(path, os.Geteuid()); err != nil {
		return st, false, fmt.Errorf("admin state handed over by the upgraded process: %w", err)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read the admin state the upgraded process handed over: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, false, fmt.Errorf("admin state %s is not valid JSON (%w): remove it and upgrade again", path, err)
	}
	if st.PID != parent {
		return AdminState{}, false, nil
	}
	for _, a := range slices.Concat(st.Added, st.Removed, st.Drained) {
		if err := checkDial("origin", a); err != nil {
			return AdminState{}, false, fmt.Errorf("admin state %s: %w", path, err)
		}
	}
	for a, by := range st.DrainedBy {
		if err := adminapi.CheckDrainer(by); err != nil {
			return AdminState{}, false, fmt.Errorf("admin state %s: drained_by of %s: %w; remove the file and upgrade again", path, a, err)
		}
	}
	return st, true, nil
}

// PrepareHandoff runs as an upgrade attempt starts (handoff.Upgrader.OnUpgrade): from now on the
// admin API refuses writes (503, Retry-After) until HandoffFailed or the end, and the admin
// state is written to path, only the owner's (0600), atomically, for the new process to read
// (ReadAdminState, then Inherit).
func (f *Forwarder) PrepareHandoff(path string) error {
	f.adminMu.Lock()
	defer f.adminMu.Unlock()
	f.frozen = true
	st := f.adminState()
	st.PID = os.Getpid()
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := spec.WritePrivate(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write the admin state for the new process: %w", err)
	}
	logger(f.Logger).Info("edge: admin state handed to the upgrade; admin writes wait for its outcome", "state", path,
		"added", st.Added, "removed", st.Removed, "drained", st.Drained, "drained_by", st.DrainedBy)
	return nil
}

// HandoffFailed ends what PrepareHandoff began when the upgrade failed: this process keeps
// serving, and its admin API takes writes again.
func (f *Forwarder) HandoffFailed() {
	f.adminMu.Lock()
	defer f.adminMu.Unlock()
	f.frozen = false
}

// adminState is the admin API's changes over the configured origins.
func (f *Forwarder) adminState() AdminState {
	var st AdminState
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

// inherited is the upstreams the edge starts with: the configured origins but those the admin
// API removed in the process this one replaces, then those it added there.
func inherited(origins []string, st *AdminState) []string {
	if st == nil {
		return origins
	}
	var out []string
	for _, a := range slices.Concat(origins, st.Added) {
		if !slices.Contains(st.Removed, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// holdWritesDuringHandoff serves the admin API's writes one by one against PrepareHandoff: a
// write that arrives while an upgrade attempt is under way is refused 503 with Retry-After, so
// no write is answered by a process whose state the new one has already read.
func (f *Forwarder) holdWritesDuringHandoff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		f.adminMu.RLock()
		defer f.adminMu.RUnlock()
		if f.frozen {
			w.Header().Set("Retry-After", "1")
			http.Error(w, errUpgrading.Error(), http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handedOff reports whether Serve's context ended for a hand-off to an upgraded process.
func (f *Forwarder) handedOff() bool { return f.HandedOff != nil && f.HandedOff() }
