package handoff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cloudflare/tableflip"

	"github.com/zero502/zero502/infra/trust"
)

// DefaultTimeout is how long a new process gets to report ready before the old one kills it
// and keeps serving.
const DefaultTimeout = time.Minute

// Options configure this process's side of the hand-off.
type Options struct {
	// PIDFile names the process that serves: a first process writes its pid once it is ready;
	// in an upgrade the old process writes the new one's once it accepted its ready, never
	// before (it may still refuse it). The attempt file beside it records each upgrade. ""
	// writes neither, and only SIGHUP can start an upgrade.
	PIDFile string
	// Timeout is how long a new process gets to report ready; 0 is DefaultTimeout.
	Timeout time.Duration
}

// Upgrader is this process's side of the hand-off: it opens listeners (inherited ones when the
// process was started by an upgrade), reports ready, and on SIGHUP starts the new process.
// A process has at most one.
type Upgrader struct {
	opts  Options
	log   *slog.Logger
	upg   *tableflip.Upgrader // nil where sockets cannot be handed on (Windows)
	hup   chan os.Signal      // SIGHUP, caught from New on so it never ends the process
	ready bool
	// handed is set once a new process took the sockets: this one's serving context then ends.
	handed atomic.Bool
	// closed is set by Close: the pid file is no longer this process's to write.
	closed atomic.Bool

	hooks sync.Mutex
	// prepare and failed are OnUpgrade's start and failed (nil: none)
	prepare func() error
	failed  func()
}

// OnUpgrade registers what the server does around each upgrade attempt: start runs as the
// attempt begins, before the new process starts, to hand over what the sockets do not carry
// (the admin API's changes: the server records them for the new process and takes no more
// until the attempt ends); an error from it fails the attempt, and this process keeps serving.
// failed runs when an attempt failed after start ran (start's own error included): this
// process keeps serving, and takes changes again. Once an attempt succeeds this process's
// serving context ends instead (HandedOff).
func (u *Upgrader) OnUpgrade(start func() error, failed func()) {
	u.hooks.Lock()
	defer u.hooks.Unlock()
	u.prepare, u.failed = start, failed
}

// HandedOff reports whether a new process took over the sockets (the context UpgradeOnHangup
// returned ended for that, not for a stop): this process now drains what it still serves, while
// the address it listened on goes on being served by its successor.
func (u *Upgrader) HandedOff() bool { return u.handed.Load() }

// New prepares the hand-off; call it before opening any listener. In a process started by an
// upgrade it takes over the sockets the old process passed. From now until Close, SIGHUP no
// longer ends the process: it asks for an upgrade (see UpgradeOnHangup).
func New(opts Options) (*Upgrader, error) {
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("upgrade timeout %s: must not be negative (0 is the default, %s)", opts.Timeout, DefaultTimeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	u := &Upgrader{opts: opts, log: slog.New(slog.DiscardHandler)}
	upg, err := processUpgrader(opts.Timeout)
	switch {
	case errors.Is(err, tableflip.ErrNotSupported):
		return u, nil
	case err != nil:
		return nil, fmt.Errorf("take over the listeners of the process that started this one: %w", err)
	}
	u.upg = upg
	u.hup = make(chan os.Signal, 1)
	signal.Notify(u.hup, syscall.SIGHUP)
	return u, nil
}

// thisProcess holds the process's tableflip.Upgrader. The inherited sockets and the pipe to the
// old process belong to the process, and tableflip allows one Upgrader per process, so every
// Upgrader shares it: the first one's Timeout counts, and once one was closed, later ones in the
// same process (tests that run a command twice) open listeners but cannot upgrade.
var thisProcess struct {
	once sync.Once
	upg  *tableflip.Upgrader
	err  error
}

func processUpgrader(timeout time.Duration) (*tableflip.Upgrader, error) {
	thisProcess.once.Do(func() {
		thisProcess.upg, thisProcess.err = tableflip.New(tableflip.Options{UpgradeTimeout: timeout})
		if thisProcess.err != nil {
			return
		}
		// The new process is this executable as it is on disk now (a replaced binary is the
		// new version); tableflip starts os.Args[0], so it names the executable's path: the
		// one it was started by (invokedPath), so a link switched to a new version since
		// (/usr/local/bin/zero502 -> /opt/zero502/<version>/zero502) starts that version.
		if exe, err := invokedPath(os.Args[0]); err == nil {
			os.Args[0] = exe
		} else if exe, err := os.Executable(); err == nil {
			os.Args[0] = exe
		}
	})
	return thisProcess.upg, thisProcess.err
}

// invokedPath is the absolute path this process was started by, argv0 (looked up on PATH
// without a slash), its symlinks kept: os.Executable resolves them, so an upgrade would start
// the file a link named when this process started, not the version installed since. It is
// refused unless it is this very executable now (argv[0] is whatever the starter chose).
func invokedPath(argv0 string) (string, error) {
	path, err := exec.LookPath(argv0)
	if err != nil {
		return "", err
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	named, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	running, err := os.Stat(exe)
	if err != nil {
		return "", err
	}
	if !os.SameFile(named, running) {
		return "", fmt.Errorf("argv[0] %s is not this executable %s", path, exe)
	}
	return path, nil
}

// Supported reports whether this platform can hand listening sockets to a new process.
func (u *Upgrader) Supported() bool { return u.upg != nil }

// Inherited reports whether this process was started by an upgrade (its listeners are the old
// process's sockets).
func (u *Upgrader) Inherited() bool { return u.upg != nil && u.upg.HasParent() }

// Listen is net.Listen for a listener the next process inherits: the old process's socket for
// the same network and address when there is one, else a new one.
func (u *Upgrader) Listen(network, addr string) (net.Listener, error) {
	if u.upg == nil {
		return net.Listen(network, addr)
	}
	ln, err := u.upg.Listen(network, addr)
	if err != nil {
		return nil, unwrapTableflip(err)
	}
	return ln, nil
}

// unwrapTableflip turns tableflip's "can't create new listener: <err>" (which does not wrap)
// back into the net error, so callers' messages read as for net.Listen.
func unwrapTableflip(err error) error {
	msg := strings.TrimPrefix(err.Error(), "can't create new listener: ")
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// holdReady, when set, runs in a process started by an upgrade between its own readiness and
// telling the old process: the tests hold a ready process there for the old one to refuse.
var holdReady func()

// asEarlierParent makes this process, when it is the old one of an upgrade, do as the earlier
// version did: no ParentWritesPID in the attempt, no pid written on accepting the new process
// (it reads the one the new process wrote). The tests upgrade from it.
var asEarlierParent bool

// Ready says this process serves. A first process writes the pid file. A process started by an
// upgrade records its pid in the attempt file and tells the old process, which may still refuse
// it (its timeout, a stop) and otherwise writes that pid to the pid file as it accepts it and
// begins its drain: until then the pid file names the old process, the one that serves, so
// SIGHUP, `zero502 lb upgrade` and systemd's PIDFile= never reach a process the old one did not
// accept, nor one it killed. A new process whose old one is of the earlier version (no
// ParentWritesPID in the attempt: it leaves the pid file to its successor, and removes it as it
// exits while it names itself) writes its own pid as it reports ready, as that version's did.
// Listeners opened from now on are not inherited.
func (u *Upgrader) Ready() error {
	u.ready = true
	inherited, parent := u.Inherited(), os.Getppid()
	switch {
	case u.opts.PIDFile == "":
	case inherited && u.updateAttempt(parent, "could not record this new process's pid for the old one to write to the pid file",
		func(a *Attempt) { a.NewPID = os.Getpid() }):
		// the old process writes it once it accepted this one
	default: // a first process, or the successor of an old process of an earlier version
		if err := writePID(u.opts.PIDFile, os.Getpid()); err != nil {
			return fmt.Errorf("pid file (--pid-file): %w", err)
		}
	}
	if u.upg == nil {
		return nil
	}
	if inherited && holdReady != nil {
		holdReady()
	}
	if err := u.upg.Ready(); err != nil {
		return fmt.Errorf("tell the old process this one is ready: %w", err)
	}
	if inherited && u.opts.PIDFile != "" {
		go u.claimPIDFile(parent)
	}
	return nil
}

// claimPIDFile covers an old process that did not write the pid file on accepting this one (an
// earlier version, which left it to its successor and removed it as it exited; or its write
// failed): once the old process exited, a pid file that is gone or still names it gets this
// process's pid. The old one had accepted this process: one it refused was killed.
func (u *Upgrader) claimPIDFile(parent int) {
	_ = u.upg.WaitForParent(context.Background()) // an error says how it exited, not whether
	if u.closed.Load() {
		return
	}
	pid, err := ReadPID(u.opts.PIDFile)
	if err == nil && pid != parent || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return // it names another process, or cannot be trusted: left alone
	}
	if err := writePID(u.opts.PIDFile, os.Getpid()); err != nil {
		u.log.Warn("the old process exited without naming this one in the pid file, which could not be written; "+
			"zero502 lb upgrade and systemd's PIDFile= cannot reach this process: check --pid-file's directory", "err", err)
		return
	}
	u.log.Info("the old process exited without naming this one in the pid file; this one wrote it", "pid_file", u.opts.PIDFile)
}

// updateAttempt changes the attempt file while it records an attempt of parent under way
// (Starting), the one that started this process; otherwise it leaves it alone. what is the
// warning logged when it cannot be written. It reports whether it wrote the change into a record
// whose old process writes the pid file (ParentWritesPID).
func (u *Upgrader) updateAttempt(parent int, what string, change func(*Attempt)) bool {
	path := attemptPath(u.opts.PIDFile)
	a, err := readAttempt(path)
	if err != nil || a.PID != parent || a.State != Starting {
		return false
	}
	change(&a)
	if err := writeAttempt(path, a); err != nil {
		u.log.Warn(what, "err", err)
		return false
	}
	return a.ParentWritesPID
}

// Fail records why a process started by an upgrade gives up before it was ready (a config
// error, a listener it cannot open), so the old process, which keeps serving, and
// `zero502 lb upgrade` can name the reason. Elsewhere it does nothing.
func (u *Upgrader) Fail(reason error) {
	if reason == nil || u.ready || !u.Inherited() || u.opts.PIDFile == "" {
		return
	}
	u.updateAttempt(os.Getppid(), "could not record why this new process failed", func(a *Attempt) {
		a.NewPID, a.Reason, a.At = os.Getpid(), reason.Error(), time.Now().UTC()
	})
}

// UpgradeOnHangup starts upgrading on SIGHUP and returns a context that ends when ctx ends or
// once a new process is ready: the caller then drains, as on SIGTERM, and exits. After ctx
// ended, no upgrade starts, and one under way is ended (its new process killed). Each attempt and its outcome get a line on log. A SIGHUP that
// arrived before (after New) starts an attempt now, which fails while the process is not Ready.
func (u *Upgrader) UpgradeOnHangup(ctx context.Context, log *slog.Logger) context.Context {
	if u.upg == nil {
		return ctx
	}
	if log != nil {
		u.log = log
	}
	serve, handedOff := context.WithCancel(ctx)
	hup := u.hup
	go func() {
		for {
			select {
			case <-ctx.Done():
				u.upg.Stop()
				return
			case <-hup:
				// A stop (SIGTERM) while the new process starts ends the attempt: the new
				// process is killed before it is ready, so it never serves beside this one's
				// drain and outlives it.
				stopOnEnd := context.AfterFunc(ctx, u.upg.Stop)
				upgraded := u.upgrade()
				stopOnEnd()
				if upgraded {
					u.handed.Store(true)
					handedOff()
					return
				}
			}
		}
	}()
	return serve
}

// upgrade runs one attempt and records it; true once the new process is ready.
func (u *Upgrader) upgrade() bool {
	start := time.Now()
	path := ""
	a := Attempt{PID: os.Getpid(), State: Starting, At: start.UTC(), ParentWritesPID: !asEarlierParent}
	if u.opts.PIDFile != "" {
		path = attemptPath(u.opts.PIDFile)
		prev, err := readAttempt(path)
		if err != nil {
			u.log.Warn("upgrade record unreadable; numbering starts again", "err", err)
		}
		a.Seq = prev.Seq + 1
		u.record(path, a)
	}
	// The new process gets the listening sockets and runs as this one: it must be a file no other
	// user could have put there (this executable as it is on disk now; tableflip starts os.Args[0]).
	if _, err := trust.Program(os.Args[0], os.Geteuid()); err != nil {
		a.At, a.State, a.Reason = time.Now().UTC(), Failed, fmt.Sprintf("the new process was not started: %v", err)
		u.record(path, a)
		u.log.Error("upgrade refused; this process keeps serving", "seq", a.Seq, "reason", a.Reason)
		return false
	}
	u.hooks.Lock()
	prepare, failed := u.prepare, u.failed
	u.hooks.Unlock()
	if prepare != nil {
		if err := prepare(); err != nil {
			a.At, a.State, a.Reason = time.Now().UTC(), Failed, fmt.Sprintf("the new process was not started: this one could not hand over its state: %v", err)
			u.record(path, a)
			u.log.Error("upgrade failed; this process keeps serving", "seq", a.Seq, "reason", a.Reason)
			if failed != nil {
				failed()
			}
			return false
		}
	}
	u.log.Info("upgrade: starting a new process with the listening sockets", "seq", a.Seq, "timeout", u.opts.Timeout.String())
	err := u.upg.Upgrade()
	a.At = time.Now().UTC()
	if err == nil {
		a.State = Ready
		switch {
		case u.opts.PIDFile == "":
		case asEarlierParent:
			a.NewPID, _ = ReadPID(u.opts.PIDFile)
		default:
			// The pid file names the new process from now on, and before the record says Ready.
			a.NewPID = u.successor(path, a.Seq)
			if a.NewPID != 0 {
				if err := writePID(u.opts.PIDFile, a.NewPID); err != nil {
					u.log.Warn("upgrade: could not write the new process's pid to the pid file; it writes it itself once this one exited",
						"seq", a.Seq, "new_pid", a.NewPID, "err", err)
				}
			}
		}
		u.record(path, a)
		u.log.Info("upgrade: the new process is ready; this one drains and exits", "seq", a.Seq, "new_pid", a.NewPID,
			"took", time.Since(start).String())
		return true
	}
	if failed != nil {
		failed()
	}
	a.State, a.Reason = Failed, u.explain(err)
	if path != "" {
		if child, rerr := readAttempt(path); rerr == nil && child.Seq == a.Seq && child.Reason != "" {
			a.NewPID, a.Reason = child.NewPID, fmt.Sprintf("the new process (pid %d) gave up: %s", child.NewPID, child.Reason)
		}
	}
	u.record(path, a)
	u.log.Error("upgrade failed; this process keeps serving", "seq", a.Seq, "reason", a.Reason)
	return false
}

// successor is the pid of the new process this one just accepted: the one it recorded in the
// attempt file (seq) before it reported ready, else the pid file's when it names another process
// (a new process of an earlier version writes it itself as it reports ready); 0 if neither.
func (u *Upgrader) successor(path string, seq int) int {
	if child, err := readAttempt(path); err == nil && child.Seq == seq && child.PID == os.Getpid() && child.NewPID != 0 {
		return child.NewPID
	}
	if pid, err := ReadPID(u.opts.PIDFile); err == nil && pid != os.Getpid() {
		return pid
	}
	return 0
}

func (u *Upgrader) record(path string, a Attempt) {
	if path == "" {
		return
	}
	if err := writeAttempt(path, a); err != nil {
		u.log.Warn("could not record the upgrade", "err", err)
	}
}

// explain turns tableflip's errors into what an operator does about them.
func (u *Upgrader) explain(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "parent hasn't exited"):
		return "the process this one replaced is still draining; upgrade again once it exited"
	case strings.Contains(msg, "not ready yet"):
		return "this process is not ready yet; upgrade again once it serves"
	case strings.Contains(msg, "timed out"):
		return fmt.Sprintf("the new process was not ready within %s and was killed (%s)", u.opts.Timeout, msg)
	}
	return "the new process did not become ready: " + msg
}

// Close ends the hand-off as the process exits: no upgrade starts any more, and the pid file is
// removed while it still names this process (after a hand-off it names the new one).
func (u *Upgrader) Close() {
	u.closed.Store(true)
	if u.upg != nil {
		u.upg.Stop()
		signal.Stop(u.hup)
	}
	if u.opts.PIDFile == "" {
		return
	}
	if pid, err := ReadPID(u.opts.PIDFile); err == nil && pid == os.Getpid() {
		_ = os.Remove(u.opts.PIDFile)
	}
}
