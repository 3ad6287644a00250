package watchdog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zero502/zero502/infra/spec"
)

// StateFile is the watchdog's state inside a host's state dir: the consecutive failures and
// heals of every service.
const StateFile = "watchdog.json"

// streaks is the state file's content.
type streaks struct {
	Host      string             `json:"host"`
	UpdatedAt time.Time          `json:"updated_at"`
	Services  map[string]*streak `json:"services"`
}

// streak is one service's run of consecutive failed checks, and its heal count.
type streak struct {
	Failures  int       `json:"consecutive_failures"`
	LastError string    `json:"last_error,omitempty"`
	LastCheck time.Time `json:"last_check"`
	Heals     int       `json:"heals_total"`
	LastHeal  time.Time `json:"last_heal,omitempty"`
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

// loadStreaks reads the state file. A missing one starts empty; an unreadable or corrupt one is
// reset with a warning: the worst outcome is a heal one streak later, never a crash.
func (w *Watchdog) loadStreaks(stateDir string) streaks {
	path := filepath.Join(stateDir, StateFile)
	data, err := os.ReadFile(path)
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

// saveStreaks writes the state file atomically.
func saveStreaks(stateDir string, s streaks) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return spec.WriteAtomic(filepath.Join(stateDir, StateFile), append(data, '\n'))
}
