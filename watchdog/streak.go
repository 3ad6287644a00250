package watchdog

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// StateFile is the watchdog's state inside a host's state dir: the consecutive failures and
// heals of every service.
const StateFile = "watchdog.json"

// streaks is the state file's content.
type streaks struct {
	Host      string    `json:"host"`
	UpdatedAt time.Time `json:"updated_at"`
	// Spec is when the spec the failures were counted against was published: a spec published
	// since (a deploy) starts every streak over.
	Spec     time.Time          `json:"spec_published_at,omitzero"`
	Services map[string]*streak `json:"services"`
}

// since starts every streak over when the published spec is not the one its failures were
// counted against (published at specAt): the instances a deploy started since are new, and the
// old ones' failures say nothing of them. Heals are kept (a total).
func (s *streaks) since(specAt time.Time) {
	if s.Spec.Equal(specAt) {
		return
	}
	for _, st := range s.Services {
		if st != nil {
			st.Failures, st.LastError, st.FailingSince = 0, "", time.Time{}
		}
	}
	s.Spec = specAt
}

// streak is one service's run of consecutive failed checks, and its heal count.
type streak struct {
	Failures  int       `json:"consecutive_failures"`
	LastError string    `json:"last_error,omitempty"`
	LastCheck time.Time `json:"last_check"`
	// FailingSince is when the streak's first counted failure was seen: the heal_after-th counts
	// only (heal_after − 1) × watchdog.interval later (I5). Zero with no failure.
	FailingSince time.Time `json:"failing_since,omitzero"`
	Heals        int       `json:"heals_total"`
	LastHeal     time.Time `json:"last_heal,omitempty"`
}

// get returns the streak of service, creating it.
func (s *streaks) get(service string) *streak {
	if s.Services == nil {
		s.Services = map[string]*streak{}
	}
	if s.Services[service] == nil {
		s.Services[service] = &streak{}
	}
	return s.Services[service]
}

// loadStreaks reads the state file. A missing one starts empty; an unreadable, corrupt or
// untrusted one is reset with a warning: the worst outcome is a heal one streak later, never a
// crash.
func (w *Watchdog) loadStreaks(stateDir string) streaks {
	path := filepath.Join(stateDir, StateFile)
	data, err := readTrusted(path)
	if os.IsNotExist(err) {
		return streaks{}
	}
	var s streaks
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err == nil {
		for name, st := range s.Services {
			if st == nil || st.Failures < 0 || st.Heals < 0 {
				err = fmt.Errorf("service %q has an impossible streak", name)
				break
			}
		}
	}
	if err != nil {
		w.log.Warn("watchdog state unreadable; starting every streak from zero", "state", path, "error", err.Error())
		return streaks{}
	}
	return s
}

// readTrusted reads the file at path by the rule the spec beside it is read by (trust.Open: a
// regular file of root's or this user's that no one else could have written, judged before it is
// read): a streak another user wrote would heal at the first failed check.
func readTrusted(path string) ([]byte, error) {
	f, err := trust.Open(path, os.Getuid())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// saveStreaks writes the state file atomically.
func saveStreaks(stateDir string, s streaks) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return spec.WriteAtomic(filepath.Join(stateDir, StateFile), append(data, '\n'))
}

// Streak is one service's watchdog state as another command shows it (zero502 status): its
// consecutive failed checks, the last failure, and the last heal (the watchdog's only action).
type Streak struct {
	Failures  int       `json:"consecutive_failures"`
	LastError string    `json:"last_error,omitempty"`
	LastCheck time.Time `json:"last_check,omitzero"`
	Heals     int       `json:"heals_total"`
	LastHeal  time.Time `json:"last_heal,omitzero"`
}

// ReadStreaks reads the state file of the host whose state dir is stateDir, read-only: each
// service's streak, and when the last tick wrote it. A host the watchdog never ticked on has
// none (no error); a corrupt file is an error that names it. Failures counted against another
// spec than the one published there now (a deploy since the last tick) are not shown: they were
// the old instances', and the next tick starts them over (streaks.since).
func ReadStreaks(stateDir string) (map[string]Streak, time.Time, error) {
	path := filepath.Join(stateDir, StateFile)
	data, err := readTrusted(path) // the tick's own rule: a file another user wrote says nothing
	if os.IsNotExist(err) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("watchdog state %s: %w", path, err)
	}
	var s streaks
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, time.Time{}, fmt.Errorf("watchdog state %s is corrupt (%v); the next tick starts every streak from zero", path, err)
	}
	if published, err := spec.Read(spec.Path(stateDir)); err == nil {
		s.since(published.PublishedAt)
	}
	out := make(map[string]Streak, len(s.Services))
	for name, st := range s.Services {
		if st != nil {
			out[name] = Streak{Failures: st.Failures, LastError: st.LastError, LastCheck: st.LastCheck, Heals: st.Heals, LastHeal: st.LastHeal}
		}
	}
	return out, s.UpdatedAt, nil
}
