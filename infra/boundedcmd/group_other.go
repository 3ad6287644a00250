//go:build !unix

package boundedcmd

import "os/exec"

// ownGroup leaves cmd as it is where there are no process groups: its cancel kills the command.
func ownGroup(*exec.Cmd) {}
