package handoff

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// The states of an Attempt.
const (
	Starting = "starting" // the new process was started; it is not ready yet
	Ready    = "ready"    // the new process serves; the old one drains and exits
	Failed   = "failed"   // the new process did not become ready; the old one keeps serving
)

// Attempt is the record of the last upgrade, in the attempt file beside the pid file.
type Attempt struct {
	// Seq numbers the attempts on this pid file, across processes: each one is the last plus one.
	Seq int `json:"seq"`
	// PID is the process that was asked to upgrade (the old one).
	PID int `json:"pid"`
	// State is Starting, Ready or Failed.
	State string `json:"state"`
	// NewPID is the new process (0 until it was started).
	NewPID int `json:"new_pid,omitempty"`
	// Reason says why a Failed attempt failed; while Starting, the new process's own error
	// once it gave up (the old one adds it to its reason).
	Reason string `json:"reason,omitempty"`
	// At is when the state was written.
	At time.Time `json:"at"`
	// ParentWritesPID: the old process writes the new one's pid to the pid file once it accepted
	// it. A new process that does not find it set (an old process of an earlier version, which
	// leaves the pid file to its successor) writes its own pid there as it reports ready.
	ParentWritesPID bool `json:"parent_writes_pid,omitempty"`
}

// attemptPath is the attempt file that belongs to pidFile.
func attemptPath(pidFile string) string { return pidFile + ".handoff.json" }

// Final reports whether the attempt ended (Ready or Failed).
func (a Attempt) Final() bool { return a.State == Ready || a.State == Failed }

// readAttempt reads the attempt file; a missing file is the zero Attempt (no upgrade yet). A
// record another user could have written is refused (readTrusted), as the pid file is: the pid it
// names would be written to the pid file and signalled by the next upgrade.
func readAttempt(path string) (Attempt, error) {
	var a Attempt
	data, err := readTrusted(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return a, nil
	case errors.Is(err, trust.ErrRefused):
		return a, fmt.Errorf("upgrade record %s is not trusted: %w; remove it, or give --pid-file a path in a directory only this user can write", path, err)
	case err != nil:
		return a, fmt.Errorf("read the upgrade record %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("upgrade record %s is not valid JSON (%w); remove it, the next upgrade writes a new one", path, err)
	}
	return a, nil
}

// writeAttempt replaces the attempt file atomically.
func writeAttempt(path string, a Attempt) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return spec.WriteAtomic(path, append(data, '\n')) // the one atomic write (fsync, rename, fsync the dir)
}
