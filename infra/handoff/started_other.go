//go:build !linux

package handoff

import (
	"errors"
	"time"
)

// startedAt cannot tell here: a process's start time is read from /proc.
func startedAt(int) (time.Time, error) { return time.Time{}, errors.New("no /proc") }
