package process

import (
	"errors"
	"syscall"
)

// The process runtime runs services on Linux hosts (it reads /proc); on Windows it builds, so
// zero502 can deploy from there, but cannot signal processes.

var errNoSignals = errors.New("the process runtime needs a Unix host to signal services; run it on the Linux host")

func ownSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func signal(int, syscall.Signal) error { return errNoSignals }

func killGroup(int) error { return errNoSignals }

func signalGroup(int, syscall.Signal) error { return errNoSignals }

func groupExists(int) bool { return false }

// noFollow has no equivalent to ask for here.
const noFollow = 0
