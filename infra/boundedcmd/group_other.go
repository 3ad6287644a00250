//go:build !unix

package boundedcmd

import "os/exec"

// ownGroup leaves cmd as it is where there are no process groups: its cancel kills the command.
func ownGroup(*exec.Cmd) {}

// killGroup has no group to kill where there are no process groups.
func killGroup(int) error { return nil }

// hasTerminal is false where a command cannot be left in a terminal's group.
func hasTerminal() bool { return false }
