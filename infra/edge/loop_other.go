//go:build !linux

package edge

import "context"

// EventLoopsAvailable reports whether this system has the Forwarder's event loops: Linux only.
const EventLoopsAvailable = false

// loops are never built here: Forwarder.loops stays nil.
type loops struct{}

func (ls *loops) abandonConnects(*upstream) {}

// serveLoops serves nothing where there are no event loops (they are Linux's, loop_linux.go):
// the goroutine path serves.
func (f *Forwarder) serveLoops(context.Context, *drainPhases) (served bool, err error) {
	return false, nil
}
