package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Session is one run of `zero502 ARGS…` on a host over ssh.
type Session struct {
	Host   string   // the host's name, for errors
	Target string   // where ssh goes: hosts[].ssh, [user@]host[:port]
	SSH    string   // the ssh client ("" ssh on PATH)
	Binary string   // zero502 on the host ("" zero502 on its PATH)
	Mux    *Mux     // the deploy's reused connections; nil: a connection of its own
	Args   []string // zero502's arguments there
	// Input is written on the remote stdin first (the config stream).
	Input []byte
	// Feed, when set, runs after Input while the session lives and writes more on stdin (the
	// fleet lock's lease renewals, a waiting step's turn) until done closes or ctx ends. An error
	// it returns ends the session at once, with no Budget (the host was given nothing it must
	// finish), and Run returns it.
	Feed func(ctx context.Context, done <-chan struct{}, stdin io.Writer) error
	// Budget is how long the host gets, once ctx ended and stdin was closed, to end on its own
	// (its step rolls back and reports) before the session is cut off, so that no host can hang
	// a deploy.
	Budget time.Duration
	// Line gets each line the host prints on stdout (a line over MaxLine: a note of its size).
	Line func([]byte)
}

// Command is the ssh invocation of the session's remote command (over its host's master when
// Mux is set).
func (s Session) Command() (*exec.Cmd, error) {
	bin := s.Binary
	if bin == "" {
		bin = "zero502"
	}
	if strings.HasPrefix(bin, "-") {
		return nil, fmt.Errorf("host %s: --remote-binary %q: must be the path or name of zero502 on the host, not an option (it starts with '-')", s.Host, bin)
	}
	words := []string{remoteProgram(bin)}
	for _, a := range s.Args {
		words = append(words, ShellQuote(a))
	}
	var mux []string
	if s.Mux != nil {
		mux = s.Mux.Options(s.Target)
	}
	cmd, err := Cmd(s.SSH, s.Target, mux, strings.Join(words, " "))
	if err != nil {
		return nil, fmt.Errorf("host %s: ssh %w", s.Host, err)
	}
	return cmd, nil
}

// remoteProgram is --remote-binary as the remote shell must see it: quoted, but a leading "~/"
// left bare, so the login shell expands it to the remote user's home (~/bin/zero502, as one
// writes it for a binary installed per user). "~user/" is not expanded: it stays quoted.
func remoteProgram(bin string) string {
	if rest, ok := strings.CutPrefix(bin, "~/"); ok && rest != "" {
		return "~/" + ShellQuote(rest)
	}
	return ShellQuote(bin)
}

// Run runs the session to its end. When ctx ends, stdin is closed: the host notices, rolls
// back and ends; one that has not ended within Budget is cut off. An ssh that could not reach
// the host at all fails with an error wrapping ErrUnreachable; every error names the host, the
// command and the end of ssh's stderr.
func (s Session) Run(ctx context.Context) error {
	cmd, err := s.Command()
	if err != nil {
		return err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr TailBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second // once ssh has exited, its stderr gets 5 s to close (see below)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("host %s: start ssh: %w (is the ssh client installed?)", s.Host, err)
	}
	var closeOnce sync.Once
	closeStdin := func() { closeOnce.Do(func() { stdin.Close() }) }
	done := make(chan struct{})
	defer close(done)
	var fed struct {
		sync.Mutex
		err error
	}
	go func() {
		if _, err := stdin.Write(s.Input); err != nil || s.Feed == nil {
			return
		}
		if err := s.Feed(ctx, done, stdin); err != nil {
			fed.Lock()
			fed.err = err
			fed.Unlock()
			closeStdin()
			_ = cmd.Process.Kill()
			_ = stdout.Close() // a client on a control master: see the cut-off below
		}
	}()
	var cutOff atomic.Bool
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		closeStdin()
		// The host now rolls back and reports; a host that has not ended within what a rollback
		// may take is cut off, so no host can hang a deploy (and the fleet lock it holds).
		t := time.NewTimer(s.Budget)
		defer t.Stop()
		select {
		case <-t.C:
			cutOff.Store(true)
			_ = cmd.Process.Kill()
			// A client on a control master handed its stdout to the master, which keeps it open
			// while the host's end lives: stop reading here, do not wait for the host to close it.
			_ = stdout.Close()
		case <-done:
		}
	}()
	ReadLines(stdout, MaxLine, s.Line)
	closeStdin()
	err = cmd.Wait()
	fed.Lock()
	if fed.err != nil {
		err = fed.err
	}
	fed.Unlock()
	if cutOff.Load() {
		err = fmt.Errorf("cut off %s after it was told to stop (the deploy was cancelled, or its step stalled): the host neither ended nor reported within the rollback budget: %w", s.Budget, err)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no message on stderr"
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == ConnectionFailed {
			if neverLoggedIn(msg) {
				err = fmt.Errorf("%w: %w", ErrNeverLoggedIn, err)
			}
			err = fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		bin := s.Binary
		if bin == "" {
			bin = "zero502"
		}
		if olderRemote(err, msg) {
			return fmt.Errorf("host %s: ssh %s `%s %s`: %w: %s; %w (%s there): install this deployer's zero502 on it "+
				"(zero502 host install --ssh %s, with --dest where --remote-binary points) and rerun",
				s.Host, s.Target, bin, strings.Join(s.Args, " "), err, msg, ErrOlderRemote, bin, s.Target)
		}
		return fmt.Errorf("host %s: ssh %s `%s %s`: %w: %s", s.Host, s.Target, bin, strings.Join(s.Args, " "), err, msg)
	}
	return nil
}

// ErrOlderRemote is wrapped by Run's error when zero502 on the host refused what the deployer
// sent it the way a zero502 older than the deployer's does: a config key, a flag or a host
// command it does not know (a usage error, exit 2).
var ErrOlderRemote = errors.New("the zero502 on the host is older than this deployer's: it does not know what this deployer sends")

// refusalsOfTheUnknown are how zero502 refuses what it does not know: its config's unknown key,
// an unknown flag or command (cobra's words).
var refusalsOfTheUnknown = []string{`unknown key "`, "unknown flag: ", "unknown shorthand flag: ", `unknown command "`}

// olderRemote says whether a session that ended with err and stderr msg was refused by an older
// zero502 (see ErrOlderRemote).
func olderRemote(err error, msg string) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		return false
	}
	for _, w := range refusalsOfTheUnknown {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}
