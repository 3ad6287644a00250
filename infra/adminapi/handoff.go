package adminapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"sync"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// An in-place upgrade (infra/handoff: SIGHUP, or zero502 lb upgrade) hands a balancer's listening
// sockets to a new process of the same command, the LB's or the edge's. What its admin API
// changed goes with them, the same way for both:
//
//   - as the attempt starts, the old process stops taking admin writes (Gate.Freeze: 503 with
//     Retry-After until the attempt ends) and writes its Handoff to HandoffFile, beside the pid
//     file (0600, atomically);
//   - the new process reads it (ReadHandoff) before it reports ready and applies it over the
//     targets its config names (Handoff.Targets, then the drains, weights and maintenance), so a
//     reload of the config still takes effect and a deploy under way keeps its drains and its
//     canary's weight.

// Handoff is the admin state a process hands to the one an upgrade starts: what the admin API
// changed in a balancer's targets with respect to its configured ones.
type Handoff struct {
	// PID is the process that wrote it: the new process takes only its parent's.
	PID int `json:"pid"`
	// Added are targets the admin API added, not among the configured ones.
	Added []string `json:"added,omitempty"`
	// Removed are configured targets the admin API removed.
	Removed []string `json:"removed,omitempty"`
	// Drained are targets the admin API holds drained (POST .../drain, not undrained since).
	Drained []string `json:"drained,omitempty"`
	// DrainedBy is who drained each of Drained (the drain's ?by=, DrainedBy), by address. A
	// drained target missing here (a file of an earlier version) is taken as DrainedByAdmin's.
	DrainedBy map[string]string `json:"drained_by,omitempty"`
	// Weights are the targets whose weight the admin API set to other than DefaultWeight.
	Weights map[string]int `json:"weights,omitempty"`
	// Maintenance is the maintenance switch when it is on (the LB's; nil: off).
	Maintenance *MaintenanceChange `json:"maintenance,omitempty"`
}

// HandoffFile is where a balancer with the pid file pidFile hands its Handoff to the process an
// upgrade starts: beside the pid file; "" without one.
func HandoffFile(pidFile string) string {
	if pidFile == "" {
		return ""
	}
	return pidFile + ".admin.json"
}

// ReadHandoff reads the Handoff at path written by the process parent (the one that started this
// one by an upgrade); checkAddr is the balancer's rule for a target's address. ok is false,
// without an error, when there is none: no file (the parent recorded none: no admin API, or a
// version that did not), or one another process wrote (a stale one). Its targets get traffic:
// only a file the balancer's own user (or root) wrote, and no one else may read or change (a pid
// file may sit in a sticky directory others can write to), is read.
func ReadHandoff(path string, parent int, checkAddr func(string) error) (st Handoff, ok bool, err error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err := trust.CheckPrivate(path, os.Geteuid()); err != nil {
		return st, false, fmt.Errorf("admin state handed over by the upgraded process: %w", err)
	}
	f, err := trust.Open(path, os.Geteuid())
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read the admin state the upgraded process handed over: %w", err)
	}
	defer f.Close()
	if err := json.NewDecoder(f).Decode(&st); err != nil {
		return Handoff{}, false, fmt.Errorf("admin state %s is not valid JSON (%w): remove it and upgrade again", path, err)
	}
	if st.PID != parent {
		return Handoff{}, false, nil
	}
	bad := func(what string, err error) (Handoff, bool, error) {
		return Handoff{}, false, fmt.Errorf("admin state %s: %s: %w; remove the file and upgrade again", path, what, err)
	}
	for _, a := range slices.Concat(st.Added, st.Removed, st.Drained) {
		if err := checkAddr(a); err != nil {
			return bad("target "+a, err)
		}
	}
	for a, by := range st.DrainedBy {
		if err := CheckDrainer(by); err != nil {
			return bad("drained_by of "+a, err)
		}
	}
	for a, w := range st.Weights {
		if err := checkAddr(a); err != nil {
			return bad("target "+a, err)
		}
		if err := CheckWeight(w); err != nil {
			return bad("weight of "+a, err)
		}
	}
	if st.Maintenance != nil {
		if err := st.Maintenance.Check(); err != nil {
			return bad("maintenance", err)
		}
	}
	return st, true, nil
}

// Targets are the targets a balancer that inherited st starts with: configured but those the
// admin API removed in the process this one replaces, then those it added there. A nil st is
// configured as it is.
func (st *Handoff) Targets(configured []string) []string {
	if st == nil {
		return configured
	}
	var out []string
	for _, a := range slices.Concat(configured, st.Added) {
		if !slices.Contains(st.Removed, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// DrainerOf is who drained a, one of st.Drained: DrainedByAdmin when the file does not say.
func (st *Handoff) DrainerOf(a string) string {
	if by := st.DrainedBy[a]; by != "" {
		return by
	}
	return DrainedByAdmin
}

// errUpgrading refuses an admin write while an upgrade attempt is under way.
var errUpgrading = errors.New("an upgrade is under way: the admin state is being handed to the new process; retry in a second")

// Gate orders the admin API's writes against an upgrade's hand-off: from Freeze on, a write is
// refused (503, Retry-After) until Thaw, so no write is answered by a process whose state the
// new one has already read. The zero Gate is open.
type Gate struct {
	mu     sync.RWMutex // writes hold it read-locked; Freeze locks it
	frozen bool
}

// Hold serves next's writes (any method but GET and HEAD) through g; reads pass at once.
func (g *Gate) Hold(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		g.mu.RLock()
		defer g.mu.RUnlock()
		if g.frozen {
			w.Header().Set("Retry-After", "1")
			http.Error(w, errUpgrading.Error(), http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Freeze runs as an upgrade attempt starts (handoff.Upgrader.OnUpgrade): it waits for the writes
// in progress, refuses the next ones until Thaw, and writes state() with this process's pid to
// path, only the owner's (0600), atomically, for the new process to read (ReadHandoff).
func (g *Gate) Freeze(path string, state func() Handoff) (Handoff, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.frozen = true
	st := state()
	st.PID = os.Getpid()
	data, err := json.Marshal(st)
	if err != nil {
		return st, err
	}
	if err := spec.WritePrivate(path, append(data, '\n')); err != nil {
		return st, fmt.Errorf("write the admin state for the new process: %w", err)
	}
	return st, nil
}

// Thaw ends what Freeze began when the upgrade failed: this process keeps serving, and its
// admin API takes writes again.
func (g *Gate) Thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.frozen = false
}
