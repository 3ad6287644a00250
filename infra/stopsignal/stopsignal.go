// Package stopsignal owns how a zero502 process learns it must stop: SIGTERM (what systemd,
// docker stop and the deployer send to start the drain handshake) or an interrupt (Ctrl-C) ends
// a context, and the process drains and exits 0. Every long-running command and every program
// of the repository takes its context from here, so SIGTERM means the same thing everywhere;
// libraries take a context and install no signal handler of their own.
package stopsignal

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Context returns a context derived from parent that is done when the process receives SIGTERM
// or os.Interrupt, or any of also (SIGHUP for a step whose ssh connection may drop). stop
// releases the handler: once stop has run, a second SIGTERM kills the process as it would
// without a handler, so a stuck drain can still be ended.
func Context(parent context.Context, also ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(parent, append([]os.Signal{syscall.SIGTERM, os.Interrupt}, also...)...)
}
