//go:build !linux

package lb

import (
	"context"
	"errors"
	"sync/atomic"
)

// Without epoll there are no event loops: Listen serves every connection on the goroutine
// path (conn.go, proxy.go, relay.go). These stubs keep the
// Server's fields and calls the same on every system.

// EventLoopsAvailable reports whether this system has the event loops (loop_linux.go).
const EventLoopsAvailable = false

var errNoEventLoops = errors.New("the event loops need Linux epoll")

// loops is never built here; Server.loops stays nil.
type loops struct {
	clients  atomic.Int64
	handoffs atomic.Uint64
}

func (s *Server) newLoops() (*loops, error)   { return nil, errNoEventLoops }
func (ls *loops) start(context.Context)       {}
func (ls *loops) wakeAll()                    {}
func (ls *loops) wait()                       {}
func (s *Server) parkInLoop(*clientConn) bool { return false }

func (s *Server) loopCount() int { return 0 }

func (s *Server) loopsRing() bool { return false }
