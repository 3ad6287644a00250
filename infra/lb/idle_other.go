//go:build !linux

package lb

import "context"

// parking needs epoll (idle_linux.go); here an idle connection keeps its goroutine and waits
// with a buffer-free peek where the system has one (see awaitRequest).
type parking struct{}

func newParking() (*parking, error)                  { return nil, errNoEventLoops }
func (s *Server) park(*clientConn) bool              { return false }
func (s *Server) runParking(context.Context)         {}
func (s *Server) closeParked(func(*clientConn) bool) {}
func (p *parking) count() int                        { return 0 }
