package edgepick

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"time"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// State is what the agent's state file keeps of a choice: the whole ranking, not only the
// winner, and the set it was measured from. A restart reads it instead of probing; a failover
// recorded in it (Chosen below the top of the ranking) survives the restart.
type State struct {
	// Name is the edge name the set was resolved from (empty with a fixed list).
	Name string `json:"name,omitempty"`
	// Set is the candidate set the ranking was measured from. A different set makes the state
	// stale, even when Chosen is still in it.
	Set Set `json:"set"`
	// Ranking is the measurement, best first.
	Ranking Ranking `json:"ranking"`
	// Chosen is the edge the agent connects to: the top of the ranking, or the address a failover
	// or a failback moved to.
	Chosen netip.AddrPort `json:"chosen"`
	// MeasuredAt is when the ranking was measured.
	MeasuredAt time.Time `json:"measured_at"`
}

// errNoState is LoadState's error when there is no state file yet.
var errNoState = errors.New("no edgepick state file")

// maxState bounds what LoadState reads: a ranking of a few hundred edges is a few tens of KiB.
const maxState = 1 << 20

// LoadState reads the state file at path. A missing file is errNoState; a file another user could
// have written (infra/trust: it decides which edge the agent connects to), one over maxState, or
// one that does not parse or does not hold together (chosen outside the set, a ranking of
// another set) is an error that says so; the caller measures again and overwrites it.
func LoadState(path string) (State, error) {
	f, err := trust.Open(path, os.Getuid())
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, fmt.Errorf("%s: %w", path, errNoState)
	}
	if err != nil {
		return State{}, fmt.Errorf("edgepick state %s is not used: %w; measuring again", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxState+1))
	if err != nil {
		return State{}, fmt.Errorf("read edgepick state %s: %w", path, err)
	}
	if len(data) > maxState {
		return State{}, fmt.Errorf("edgepick state %s is over %d bytes: not an edgepick state; the next measurement overwrites it", path, maxState)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, fmt.Errorf("edgepick state %s is corrupt (%v); the next measurement overwrites it", path, err)
	}
	if err := s.check(); err != nil {
		return State{}, fmt.Errorf("edgepick state %s is corrupt (%v); the next measurement overwrites it", path, err)
	}
	return s, nil
}

// check is what a state must hold to be used: a canonical set, a ranking of exactly that set,
// and a chosen address that finished its handshake.
func (s State) check() error {
	if !s.Set.Equal(setOf(s.Set)) {
		return fmt.Errorf("set %v is not sorted and unique", s.Set)
	}
	if !s.Ranking.Set().Equal(s.Set) || len(s.Ranking) != len(s.Set) {
		return fmt.Errorf("ranking of %v does not match set %v", s.Ranking.Set(), s.Set)
	}
	m, ok := s.Ranking.Find(s.Chosen)
	if !ok {
		return fmt.Errorf("chosen %s is not in set %v", s.Chosen, s.Set)
	}
	if !m.Healthy() {
		return fmt.Errorf("chosen %s failed its probe", s.Chosen)
	}
	if s.MeasuredAt.IsZero() {
		return fmt.Errorf("measured_at is missing")
	}
	return nil
}

// saveState writes s to path atomically (temp file, fsync, rename, fsync of the directory; the
// project's spec.WriteAtomic), so a reader sees the old state or the new one, never half.
func saveState(path string, s State) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("edgepick state for %s not written: %w", path, err)
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("edgepick state for %s: %w", path, err)
	}
	if err := spec.WriteAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("edgepick state: %w", err)
	}
	return nil
}

// FutureAllowance is how far after now a measurement's MeasuredAt may be and still count as
// fresh: clocks stepped back by a little (NTP, a VM resumed). A measurement stamped further in
// the future has an age nobody can tell, so it is stale: without this, a clock stepped back by a
// day would keep a measurement "fresh" for that day plus MaxAge.
const FutureAllowance = time.Minute

// Stale says why the state cannot be used for set at now, or "" when it can: the set changed
// (an edge was added or removed), the measurement is stamped more than FutureAllowance after
// now (the clock went back), or it is older than maxAge (0: no age limit).
func (s State) Stale(set Set, now time.Time, maxAge time.Duration) string {
	if !s.Set.Equal(set) {
		return fmt.Sprintf("the set changed from %v to %v", s.Set, set)
	}
	if ahead := s.MeasuredAt.Sub(now); ahead > FutureAllowance {
		return fmt.Sprintf("measured %s in the future (at %s, now %s), more than the %s allowance: the clock went back",
			ahead.Round(time.Second), s.MeasuredAt.Format(time.RFC3339), now.Format(time.RFC3339), FutureAllowance)
	}
	if age := now.Sub(s.MeasuredAt); maxAge > 0 && age > maxAge {
		return fmt.Sprintf("measured %s ago, more than the %s limit", age.Round(time.Second), maxAge)
	}
	return ""
}
