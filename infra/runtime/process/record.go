package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// record is an instance's file, <stateDir>/instances/<service>.json (<service>@<port>.json for
// a start-first service, whose two instances run side by side during a deploy, one per port):
// what a later command (or a new Runtime value) needs to find the process again and to tell it
// from a recycled pid.
type record struct {
	// Slot is the port of a start-first service's instance ("" for a service with one slot).
	Slot string `json:"slot,omitempty"`
	PID  int    `json:"pid"`
	// ProcStart is /proc/<pid>/stat field 22 (clock ticks since boot) at start.
	ProcStart uint64   `json:"proc_start"`
	Host      string   `json:"host"`
	Service   string   `json:"service"`
	Version   string   `json:"version"`
	Address   string   `json:"address,omitempty"`
	Command   []string `json:"command"`
	// StopSignal is the spec's stop_signal at Start, which Stop sends; "" (older records) is SIGTERM.
	StopSignal string `json:"stop_signal,omitempty"`
	// Digest is the spec.Service.Digest it was started from; "" in older records.
	Digest    string    `json:"digest,omitempty"`
	StartedAt time.Time `json:"started_at"`
	Log       string    `json:"log"`
	// ExitCode and ExitedAt are filled in when this Runtime saw the exit (its own child, or a
	// stop it did); nil when the process exited unseen.
	ExitCode *int      `json:"exit_code,omitempty"`
	ExitedAt time.Time `json:"exited_at,omitzero"`
}

func (r record) id() string { return "pid:" + fmt.Sprint(r.PID) }

// key names r's file: its service, and its slot when it has one.
func (r record) key() string { return slotKey(r.Service, r.Slot) }

// slotKey is the record file name (without .json) of service's instance in slot.
func slotKey(service, slot string) string {
	if slot == "" {
		return service
	}
	return service + "@" + slot
}

func (rt *Runtime) recordPath(key string) string {
	return filepath.Join(rt.dir, "instances", key+".json")
}

func (rt *Runtime) logPath(service string) string {
	return filepath.Join(rt.dir, "logs", service+".log")
}

func (rt *Runtime) writeRecord(r record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return spec.WritePrivate(rt.recordPath(r.key()), append(data, '\n'))
}

// readRecord reads the record named key (slotKey); os.ErrNotExist (wrapped) when there is none.
func (rt *Runtime) readRecord(key string) (record, error) {
	path := rt.recordPath(key)
	data, err := os.ReadFile(path)
	if err != nil {
		return record{}, err
	}
	// A record names the process zero502 signals and the command it watches: one another user
	// could have written is never believed.
	if err := trust.Check(path, os.Getuid()); err != nil {
		return record{}, fmt.Errorf("instance record %s is not trusted, so its process is neither signalled nor counted as running: %w", path, err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil || r.PID <= 0 {
		return record{}, fmt.Errorf("instance record %s is corrupt (%v); remove it once no process of service %q runs", path, err, strings.Split(key, "@")[0])
	}
	return r, nil
}

// recordsOf reads the records of service (one, or one per slot), or every record when service
// is empty. Only that service's files are read: a corrupt record of another service is not its
// business.
func (rt *Runtime) recordsOf(service string) ([]record, error) {
	if service == "" {
		return rt.records()
	}
	if !plainName(service) {
		return nil, nil // no record can have that name
	}
	return rt.readRecords(func(key string) bool { return key == service || strings.HasPrefix(key, service+"@") })
}

// records reads every record, ordered by service.
func (rt *Runtime) records() ([]record, error) {
	return rt.readRecords(func(string) bool { return true })
}

// readRecords reads the records whose key want accepts, ordered by service and slot.
func (rt *Runtime) readRecords(want func(key string) bool) ([]record, error) {
	entries, err := os.ReadDir(filepath.Join(rt.dir, "instances"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []record
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") || !want(strings.TrimSuffix(name, ".json")) {
			continue
		}
		r, err := rt.readRecord(strings.TrimSuffix(name, ".json"))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed between ReadDir and now
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// noteExit writes the exit code into the record of r's process, unless the record now belongs to
// another process (a newer instance of the service).
func (rt *Runtime) noteExit(r record, code int, at time.Time) error {
	unlock, err := rt.lockRecords()
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := rt.readRecord(r.key())
	if err != nil || cur.PID != r.PID || cur.ProcStart != r.ProcStart {
		return nil
	}
	cur.ExitCode = &code
	cur.ExitedAt = at.UTC()
	return rt.writeRecord(cur)
}

// lockRecords serialises a read-modify-write of the instance records against every other
// Runtime value on the same state dir, in this process or another (a deploy and a watchdog, or
// two deploys in one demo): this value's mutex plus flock(2) on instances/.lock. Without it, the
// exit note of an old instance could overwrite the record of the new one.
func (rt *Runtime) lockRecords() (func(), error) {
	rt.mu.Lock()
	dir := filepath.Join(rt.dir, "instances")
	if err := trust.MkdirAll(dir, spec.DirMode, os.Getuid()); err != nil {
		rt.mu.Unlock()
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	fl := flock.New(filepath.Join(dir, ".lock"))
	if err := fl.Lock(); err != nil {
		rt.mu.Unlock()
		return nil, fmt.Errorf("process runtime: lock %s: %w", fl.Path(), err)
	}
	return func() {
		fl.Close()
		rt.mu.Unlock()
	}, nil
}
