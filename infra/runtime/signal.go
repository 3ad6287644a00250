package runtime

import (
	"fmt"
	"syscall"
)

// DefaultStopSignal is the stop signal of a service whose spec names none.
const DefaultStopSignal = "SIGTERM"

// StopSignal is the signal named name (services[].stop_signal: SIGTERM, SIGQUIT, SIGINT, SIGHUP,
// SIGUSR1, SIGUSR2 or SIGWINCH); "" is SIGTERM.
func StopSignal(name string) (syscall.Signal, error) {
	switch name {
	case "", "SIGTERM":
		return syscall.SIGTERM, nil
	case "SIGQUIT":
		return syscall.SIGQUIT, nil
	case "SIGINT":
		return syscall.SIGINT, nil
	case "SIGHUP":
		return syscall.SIGHUP, nil
	case "SIGUSR1":
		return sigUSR1, nil
	case "SIGUSR2":
		return sigUSR2, nil
	case "SIGWINCH":
		return sigWINCH, nil
	}
	return 0, fmt.Errorf("stop_signal %q: not a signal zero502 stops services with (SIGTERM, SIGQUIT, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGWINCH); fix services[].stop_signal and redeploy", name)
}
