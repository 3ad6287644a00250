// Package process is the local-process implementation of runtime.Runtime: each "host" is a state
// dir on this machine, each service instance a process in its own session that outlives the
// command that started it (as a container outlives `docker run -d`), found again by later
// commands through its record <stateDir>/instances/<service>.json (pid plus the kernel's start
// time of that pid, so a recycled pid is never mistaken for the instance); its output is appended
// to <stateDir>/logs/<service>.log. A service gets exactly runtime.ServiceEnv of its configured
// env (a fixed base, never the starter's environment) and runs in the directory / (as systemd's
// default WorkingDirectory for a system service, never the starter's working directory), its
// program found on that environment's PATH alone, so a deploy from a shell and a heal by the
// watchdog under systemd start the same process. Stop is the service's stop signal (SIGTERM
// unless services[].stop_signal says otherwise), a grace period, then SIGKILL of the process
// group, reported as a failure of invariant I2.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// defaultEarlyExitWindow is how long Start watches a new process for an immediate exit.
const defaultEarlyExitWindow = 100 * time.Millisecond

// Runtime runs the services of one host as local processes. Its methods are safe for concurrent
// use; several Runtime values (several commands) may share a state dir, and the host lock keeps
// their writers apart.
type Runtime struct {
	// EarlyExitWindow is how long Start waits to see whether the process exits at once (then
	// Start fails with the log tail); set it before use. Default defaultEarlyExitWindow.
	EarlyExitWindow time.Duration

	dir      string
	mu       sync.Mutex     // serialises record writes of this value (recordsLock: of all values)
	cmu      sync.Mutex     // guards children
	children map[int]*child // processes this value started, by pid: only it can reap them
}

// child is a process this Runtime started: our child until we exit, reaped by a goroutine so
// it never lingers as a zombie (which kill(pid, 0) would still call alive).
type child struct {
	start uint64
	done  chan struct{} // closed once reaped
	noted chan struct{} // closed once the exit is written into the record (or found not to be ours)
	code  int           // exit code; 128+signal when killed by a signal
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns the Runtime of the host whose state dir is stateDir (created if missing).
func New(stateDir string) (*Runtime, error) {
	rt, err := Open(stateDir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"instances", "logs"} {
		if err := trust.MkdirAll(filepath.Join(rt.dir, sub), spec.DirMode, os.Getuid()); err != nil {
			return nil, fmt.Errorf("process runtime: create %s: %w", filepath.Join(rt.dir, sub), err)
		}
	}
	return rt, nil
}

// Open returns the Runtime of the host whose state dir is stateDir to look at what runs there
// (zero502 status): unlike New it makes no directory, and a state dir not made yet holds no
// instance.
func Open(stateDir string) (*Runtime, error) {
	if stateDir == "" {
		return nil, errors.New("process runtime: the host's state_dir is empty; set hosts[].state_dir in the config")
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	return &Runtime{EarlyExitWindow: defaultEarlyExitWindow, dir: dir, children: map[int]*child{}}, nil
}

// StateDir is the host's state dir (absolute).
func (rt *Runtime) StateDir() string { return rt.dir }

// LogPath is where the output of service's instances is appended.
func (rt *Runtime) LogPath(service string) string { return rt.logPath(service) }

// Start runs svc.Command as its user (runAs) with the environment runtime.ServiceEnv of that user
// and svc.Environment() (its program looked up in that environment's PATH) in its own session,
// in the directory / (serviceDir), output appended to the service's log, records
// it with its stop signal and returns once it is running. It refuses while an
// instance of the service runs, and fails with the log's tail when the process exits within
// EarlyExitWindow.
func (rt *Runtime) Start(ctx context.Context, host string, svc spec.Service) (runtime.Instance, error) {
	if err := checkService(svc); err != nil {
		return runtime.Instance{}, err
	}
	if err := ctx.Err(); err != nil {
		return runtime.Instance{}, err
	}
	unlock, err := rt.lockRecords()
	if err != nil {
		return runtime.Instance{}, err
	}
	rec, logStart, c, err := rt.spawn(host, svc)
	unlock()
	if err != nil {
		return runtime.Instance{}, err
	}
	go rt.watchExit(rec, c)

	select {
	case <-c.done:
		<-c.noted // the record says "exited" before Start returns
		left := ""
		if leftBehind(rec) { // it never ran as an instance: what it started goes with it
			left = "; what it left in its process group was SIGKILLed"
			_ = killGroup(rec.PID)
			if !rt.waitGroup(context.WithoutCancel(ctx), rec.PID, killWait) {
				left = fmt.Sprintf("; what it left in its process group %d is still there %s after SIGKILL", rec.PID, killWait)
			}
		}
		return runtime.Instance{}, fmt.Errorf("host %s: service %s %s exited at once with code %d%s; end of %s:\n%s",
			host, svc.Name, svc.Version, c.code, left, rec.Log, tail(rec.Log, logStart))
	case <-time.After(rt.EarlyExitWindow):
	}
	return rt.instance(rec), nil
}

// runAs is the user svc runs as: the spec's run_as, else services[].user, else ("") this
// process's user.
func runAs(svc spec.Service) string {
	if svc.RunAs != "" {
		return svc.RunAs
	}
	return svc.User
}

// program is what a service's instance runs: its program's path, the account it runs as and
// its environment.
type program struct {
	path string
	as   runtime.Account
	env  []string
}

// missingProgram is programOf's error for a program that is not there: err says where it
// was looked for.
type missingProgram struct{ err error }

func (m missingProgram) Error() string { return "(services[].command): " + m.err.Error() }
func (m missingProgram) Unwrap() error { return m.err }

// programOf finds svc's program as its own environment would and holds it to the trust rule:
// what runs, and a script it reads, must be changeable by root or the user it runs as alone (a
// service started as root from a file another user may write is theirs to run). An error says
// which of services[].user and services[].command is wrong; a program that is not there is a
// missingProgram, with path the name as written.
func programOf(svc spec.Service) (program, error) {
	as, err := runtime.LookupAccount(runAs(svc))
	if err != nil {
		return program{}, fmt.Errorf("(services[].user): %w", err)
	}
	p := program{as: as, env: runtime.ServiceEnv(as, svc.Environment())}
	if p.path, err = lookPath(svc.Command[0], p.env); err != nil {
		p.path = svc.Command[0]
		return p, missingProgram{err}
	}
	if !filepath.IsAbs(p.path) { // lookPath's promise: trust.Command must not search zero502's own PATH
		return p, fmt.Errorf("(services[].command): program %q is not an absolute path", p.path)
	}
	// Relative arguments (python3 app.py) are judged where the service runs them: serviceDir.
	real, err := trust.Command(append([]string{p.path}, svc.Command[1:]...), serviceDir, int(as.UID))
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return p, missingProgram{err}
	case err != nil:
		return p, fmt.Errorf("(services[].command): %w", err)
	}
	p.path = real
	return p, nil
}

// CheckProgram says, before anything starts, whether svc's instance could be started: its
// account exists, its program is there and passes the trust rule (Start's own checks).
func (rt *Runtime) CheckProgram(svc spec.Service) error {
	if err := checkService(svc); err != nil {
		return err
	}
	_, err := programOf(svc)
	return err
}

// spawn checks that no instance of svc runs, starts the process and writes its record; it
// returns the record, the log offset where this run's output begins and the child.
func (rt *Runtime) spawn(host string, svc spec.Service) (record, int64, *child, error) {
	slot := ""
	if len(svc.Ports) == 2 {
		slot = strconv.Itoa(svc.Port) // start-first: one instance per port may run
	}
	olds, err := rt.recordsOf(svc.Name)
	if err != nil {
		return record{}, 0, nil, err
	}
	for _, old := range olds {
		if old.Slot != slot && (svc.Address == "" || old.Address != svc.Address) {
			continue
		}
		if inst := rt.instance(old); inst.Running() {
			return record{}, 0, nil, fmt.Errorf("host %s: service %s already runs as %s on %s (version %s, started %s); stop it first",
				host, svc.Name, inst.ID, orNone(inst.Address), inst.Version, inst.StartedAt.Format(time.RFC3339))
		} else if leftBehind(old) {
			return record{}, 0, nil, fmt.Errorf("host %s: service %s: instance %s (version %s) exited with code %d, but what it started "+
				"still runs in its process group %d (holding %s?); stop that instance first", host, svc.Name, inst.ID, inst.Version,
				inst.ExitCode, old.PID, orNone(inst.Address))
		}
	}

	cmd := &exec.Cmd{}
	logPath := rt.logPath(svc.Name)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow, spec.PrivateMode)
	if err != nil {
		return record{}, 0, nil, fmt.Errorf("host %s: service %s: open log: %w", host, svc.Name, err)
	}
	defer logFile.Close() // the child has its own descriptor
	logStart, _ := logFile.Seek(0, 2)
	fmt.Fprintf(logFile, "== zero502 %s: starting %s %s on %s: %s\n",
		time.Now().UTC().Format(time.RFC3339Nano), svc.Name, svc.Version, host, strings.Join(svc.Command, " "))

	p, err := programOf(svc)
	var missing missingProgram
	switch {
	case errors.As(err, &missing): // no such program: Start says so, as for any other
		cmd.Err = missing.err
	case err != nil:
		return record{}, 0, nil, fmt.Errorf("host %s: service %s %w", host, svc.Name, err)
	}
	if cmd.SysProcAttr, err = sessionAs(p.as); err != nil {
		return record{}, 0, nil, fmt.Errorf("host %s: service %s (services[].user): %w", host, svc.Name, err)
	}
	cmd.Path, cmd.Args, cmd.Env, cmd.Dir = p.path, svc.Command, p.env, serviceDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return record{}, 0, nil, fmt.Errorf("host %s: service %s: start %q: %w", host, svc.Name, svc.Command[0], err)
	}
	pid := cmd.Process.Pid
	st, statErr := readStat(pid)
	c := &child{start: st.Start, done: make(chan struct{}), noted: make(chan struct{})}
	rt.cmu.Lock()
	rt.children[pid] = c
	rt.cmu.Unlock()
	go func() {
		cmd.Wait()
		c.code = exitCode(cmd.ProcessState)
		close(c.done)
	}()
	if statErr != nil {
		killGroup(pid)
		<-c.done
		close(c.noted) // no record to note the exit in
		return record{}, 0, nil, fmt.Errorf("host %s: service %s: read /proc/%d/stat of the new process: %w; its log:\n%s",
			host, svc.Name, pid, statErr, tail(logPath, logStart))
	}
	rec := record{Slot: slot, PID: pid, ProcStart: st.Start, Host: host, Service: svc.Name, Version: svc.Version,
		Address: svc.Address, Command: svc.Command, StopSignal: svc.StopSignal, Digest: svc.Digest(), StartedAt: time.Now().UTC(), Log: logPath}
	if err := rt.writeRecord(rec); err != nil {
		killGroup(pid)
		close(c.noted) // no record to note the exit in
		return record{}, 0, nil, fmt.Errorf("host %s: service %s: killed pid %d, its record could not be written: %w", host, svc.Name, pid, err)
	}
	return rec, logStart, c, nil
}

// watchExit writes the exit code of a child into its record once it is reaped.
func (rt *Runtime) watchExit(rec record, c *child) {
	defer close(c.noted)
	<-c.done
	rt.noteExit(rec, c.code, time.Now())
}

// Inspect returns the instance with id "pid:<n>"; ErrNotFound when no record has that pid.
func (rt *Runtime) Inspect(_ context.Context, id string) (runtime.Instance, error) {
	r, err := rt.find(id)
	if err != nil {
		return runtime.Instance{}, err
	}
	return rt.instance(r), nil
}

// List returns the recorded instances matching f, running or exited, ordered by service. With
// f.Service it reads that service's record only: a corrupt record of another service does not
// stop a heal or a deploy of this one (a corrupt record of this service is an error naming it).
func (rt *Runtime) List(_ context.Context, f runtime.Filter) ([]runtime.Instance, error) {
	recs, err := rt.recordsOf(f.Service)
	if err != nil {
		return nil, err
	}
	var out []runtime.Instance
	for _, r := range recs {
		if (f.Host == "" || f.Host == r.Host) && (f.Service == "" || f.Service == r.Service) &&
			(f.Version == "" || f.Version == r.Version) {
			out = append(out, rt.instance(r))
		}
	}
	return out, nil
}

// Remove deletes the record of an exited instance (its log stays); a running one is refused.
func (rt *Runtime) Remove(_ context.Context, inst runtime.Instance) error {
	unlock, err := rt.lockRecords()
	if err != nil {
		return err
	}
	defer unlock()
	r, err := rt.recordOf(inst)
	if err != nil {
		return err
	}
	cur := rt.instance(r)
	if cur.Running() {
		return fmt.Errorf("service %s: instance %s is running; stop it before removing it", inst.Service, inst.ID)
	}
	if leftBehind(r) { // forgotten, nothing would track what it left (holding its port, maybe)
		return fmt.Errorf("service %s: instance %s exited with code %d, but what it started still runs in its process group %d "+
			"(a server a wrapper script started without exec, a sidecar?); stop the instance before removing it", inst.Service, inst.ID, cur.ExitCode, r.PID)
	}
	if err := os.Remove(rt.recordPath(r.key())); err != nil {
		return err
	}
	rt.cmu.Lock()
	delete(rt.children, r.PID)
	rt.cmu.Unlock()
	return nil
}

// find returns the record with id "pid:<n>", preferring a running one if two share the pid.
func (rt *Runtime) find(id string) (record, error) {
	pid, err := strconv.Atoi(strings.TrimPrefix(id, "pid:"))
	if err != nil || !strings.HasPrefix(id, "pid:") {
		return record{}, fmt.Errorf("instance id %q: want pid:<n>: %w", id, runtime.ErrNotFound)
	}
	recs, err := rt.records()
	if err != nil {
		return record{}, err
	}
	var found *record
	for i := range recs {
		if recs[i].PID == pid {
			if found == nil || rt.instance(recs[i]).Running() {
				found = &recs[i]
			}
		}
	}
	if found == nil {
		return record{}, fmt.Errorf("instance %s in %s: %w", id, rt.dir, runtime.ErrNotFound)
	}
	return *found, nil
}

// recordOf returns inst's record: the record of inst.Service that has inst's id (one pid could
// appear in two records after pid reuse), else the record found by id.
func (rt *Runtime) recordOf(inst runtime.Instance) (record, error) {
	if inst.Service != "" {
		recs, err := rt.recordsOf(inst.Service)
		if err != nil {
			return record{}, err
		}
		for _, r := range recs {
			if r.id() == inst.ID {
				return r, nil
			}
		}
		return record{}, fmt.Errorf("service %s: instance %s: %w (its record is gone or belongs to a newer instance)",
			inst.Service, inst.ID, runtime.ErrNotFound)
	}
	return rt.find(inst.ID)
}

func orNone(addr string) string {
	if addr == "" {
		return "no port"
	}
	return addr
}

// instance is r as a runtime.Instance with its live state. ExitCode is -1 when the process
// exited unseen (not our child, not stopped by us: its parent got the status).
func (rt *Runtime) instance(r record) runtime.Instance {
	inst := runtime.Instance{ID: r.id(), Host: r.Host, Service: r.Service, Version: r.Version,
		Address: r.Address, State: runtime.StateRunning, StartedAt: r.StartedAt, StopSignal: r.StopSignal, Digest: r.Digest}
	exited, code := rt.exited(r)
	if exited {
		inst.State = runtime.StateExited
		inst.ExitCode = code
	}
	return inst
}

// exited says whether r's process is gone and with which exit code (-1 unknown).
func (rt *Runtime) exited(r record) (bool, int) {
	rt.cmu.Lock()
	c := rt.children[r.PID]
	rt.cmu.Unlock()
	if c != nil && c.start == r.ProcStart {
		select {
		case <-c.done:
			return true, c.code
		default:
		}
	}
	if liveness(r.PID, r.ProcStart) {
		return false, 0
	}
	if r.ExitCode != nil {
		return true, *r.ExitCode
	}
	if c != nil && c.start == r.ProcStart {
		<-c.done // a zombie of ours: being reaped now
		return true, c.code
	}
	return true, -1
}

// plainName reports whether a service name can name its record and log files: a plain file name.
func plainName(name string) bool {
	return name != "" && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, "/\\\x00")
}

func checkService(svc spec.Service) error {
	switch {
	case !plainName(svc.Name):
		return fmt.Errorf("process runtime: service name %q must be a plain file name (services[].name)", svc.Name)
	case len(svc.Command) == 0 || svc.Command[0] == "":
		return fmt.Errorf("process runtime: service %s has no command; set services[].command (the process runtime runs commands, not images)", svc.Name)
	}
	for i, w := range svc.Command {
		if strings.ContainsRune(w, 0) {
			return fmt.Errorf("process runtime: service %s: services[].command[%d] %q: must not contain a NUL byte (no program can be given one)", svc.Name, i, w)
		}
	}
	env := svc.Environment()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		switch {
		case !config.EnvName(k):
			return fmt.Errorf("process runtime: service %s: services[].env %q: %s", svc.Name, k, config.EnvNameRule)
		case strings.ContainsRune(v, 0):
			if _, secret := svc.SecretEnv[k]; secret {
				return fmt.Errorf("process runtime: service %s: the value of services[].env.%s (a secret) must not contain a NUL byte (no process can be given one)", svc.Name, k)
			}
			return fmt.Errorf("process runtime: service %s: services[].env.%s %q: must not contain a NUL byte (no process can be given one)", svc.Name, k, v)
		}
	}
	if _, err := runtime.StopSignal(svc.StopSignal); err != nil {
		return fmt.Errorf("process runtime: service %s: %w", svc.Name, err)
	}
	return nil
}

// exitCode is the shell's convention: the exit status, or 128+signal when a signal ended it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// tailMax bounds what tail reads of a log: its last 20 lines are in there, and the log's past
// (appended to for as long as the host runs the service) is never read into memory.
const tailMax = 64 << 10

// tail is the end of the log written since offset from (at most 20 lines, of its last tailMax
// bytes).
func tail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	if from < 0 || from > fi.Size() {
		from = 0
	}
	start := max(from, fi.Size()-tailMax)
	data := make([]byte, fi.Size()-start)
	n, err := f.ReadAt(data, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return "(log unreadable: " + err.Error() + ")"
	}
	data = data[:n]
	if start > from { // cut in the middle of a line: it starts after the first newline
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
