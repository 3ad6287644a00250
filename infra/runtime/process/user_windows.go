package process

import (
	"syscall"

	"github.com/zero502/zero502/infra/runtime"
)

// sessionAs cannot switch users here; the process runtime runs services on Unix hosts.
func sessionAs(runtime.Account) (*syscall.SysProcAttr, error) { return ownSession(), nil }
