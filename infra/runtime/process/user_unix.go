//go:build unix

package process

import (
	"fmt"
	"os"
	"syscall"

	"github.com/zero502/zero502/infra/runtime"
)

// sessionAs is ownSession for a service run as a: its uid, gid and groups when a is another
// user than zero502's, which only root may switch to.
func sessionAs(a runtime.Account) (*syscall.SysProcAttr, error) {
	attr := ownSession()
	if a.IsSelf() {
		return attr, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("runs as %s (uid %d), and zero502 runs as uid %d, which cannot start a process as another user: "+
			"deploy and run the watchdog as root or as %s, or set services[].user to this user", a.Name, a.UID, os.Geteuid(), a.Name)
	}
	attr.Credential = &syscall.Credential{Uid: a.UID, Gid: a.GID, Groups: a.Groups}
	return attr, nil
}
