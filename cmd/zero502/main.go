// Command zero502 deploys containerised services across a fleet behind a load balancer with no
// failed requests, and runs the traffic layer those deploys go through. Each subcommand is thin:
// it parses flags, loads the config (package infra) and calls one package; see `zero502 --help`.
package main

import (
	"errors"
	"fmt"
	"os"

	_ "github.com/zero502/zero502/infra/secrets/secretsmanager" // secrets.aws: the deploy reads AWS Secrets Manager
)

func main() {
	err := newRootCmd().Execute()
	if err == nil {
		return
	}
	var ex *exitError
	if errors.As(err, &ex) {
		if ex.err != nil {
			fmt.Fprintln(os.Stderr, "zero502:", ex.err)
		}
		os.Exit(ex.code)
	}
	fmt.Fprintln(os.Stderr, "zero502:", err)
	os.Exit(1)
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
