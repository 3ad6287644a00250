// Command zero502 deploys containerised services across a fleet behind a load balancer with no
// failed requests, and runs the traffic layer those deploys go through. Each subcommand is thin:
// it parses flags, loads the config (package infra/config) and calls one package; see `zero502 --help`.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/printable"
	_ "github.com/zero502/zero502/infra/secrets/secretsmanager" // secrets.aws: the deploy reads AWS Secrets Manager
	"github.com/zero502/zero502/internal/startgc"
)

func main() {
	startgc.Restore() // the collector's own GOGC again, once a short command is done
	cmd, err := newRootCmd().ExecuteC()
	if err == nil {
		return
	}
	if line := errorLine(cmd, err); line != "" {
		fmt.Fprintln(os.Stderr, line)
	}
	os.Exit(exitStatus(err))
}

// exitStatus is the exit code err stands for: an exitError's, else 1.
func exitStatus(err error) int {
	var ex *exitError
	if errors.As(err, &ex) {
		return ex.code
	}
	return 1
}

// errorLine is the line main prints for err, returned by Execute from cmd (the command that
// ran, or the root): "zero502 <command path>: <message>", the path said once. Many messages
// start with the path already (requireFlags, the flag errors) or with it less the root's name
// ("agent: …", "mesh lb-sync: …"); that start gives way to the full path. An exitError with no
// error (the command printed its result) is no line: "". What a host, a service or a file put in
// the message is printable.String: it cannot drive the terminal.
func errorLine(cmd *cobra.Command, err error) string {
	var ex *exitError
	if errors.As(err, &ex) {
		err = ex.err
	}
	if err == nil {
		return ""
	}
	path := "zero502"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	short := path
	if _, rest, ok := strings.Cut(path, " "); ok {
		short = rest
	}
	msg := err.Error()
	for {
		if rest, ok := strings.CutPrefix(msg, path+": "); ok {
			msg = rest
		} else if rest, ok := strings.CutPrefix(msg, short+": "); ok {
			msg = rest
		} else {
			break
		}
	}
	return printable.String(path + ": " + msg)
}

// exitError carries a command's exit code (e.g. invariants: 1 violated, 2 config invalid).
// A nil err exits with code silently (the command already printed its result).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode wraps err so main exits with code.
func exitCode(code int, err error) error { return &exitError{code: code, err: err} }
