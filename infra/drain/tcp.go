package drain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/backoff"
)

// ServeTCP is the handshake for a plain net.Listener server (the edge forwarder): it accepts on
// ln and runs handle for each connection in its own goroutine (ServeTCP closes the connection
// when handle returns). When ctx is cancelled it calls hs.OnPhase(PhaseDraining) (where the
// server starts reporting itself unhealthy: TCP has no health path) and keeps accepting and
// serving for hs.Window; then it closes ln, waits up to hs.Shutdown for the open connections'
// handlers to return, closes the connections still open and returns nil. It does not wait for
// handlers after that close: a handler must return once its connection is closed.
func ServeTCP(ctx context.Context, ln net.Listener, handle func(net.Conn), hs Handshake) error {
	hs, err := hs.prepare()
	if err != nil {
		return err
	}
	if handle == nil {
		return errors.New("drain: ServeTCP needs a connection handler")
	}
	addr := ln.Addr().String()
	conns := newConnSet()
	accepted := make(chan error, 1)
	go func() { accepted <- acceptLoop(ln, conns, handle, hs) }()
	select {
	case err := <-accepted:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}

	var tl timeline
	hs.enter(&tl, PhaseDraining, addr)
	select {
	case <-hs.Clock.After(hs.Window):
	case err := <-accepted:
		hs.log("listener failed during the drain window; finishing in-flight now", "addr", addr, "error", err)
		accepted <- nil
	}
	ln.Close()
	<-accepted
	hs.enter(&tl, PhaseStoppedAccepting, addr)
	select {
	case <-conns.idle():
	case <-hs.Clock.After(hs.Shutdown):
		tl.cut = conns.closeAll()
	}
	hs.enter(&tl, PhaseDone, addr)
	return nil
}

// acceptLoop accepts until ln is closed (nil) or fails for good (the error). Transient errors
// (out of file descriptors, aborted handshakes) are retried with a growing pause.
func acceptLoop(ln net.Listener, conns *connSet, handle func(net.Conn), hs Handshake) error {
	var pauses backoff.AcceptPause
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			pause := pauses.Next()
			hs.log("accept failed; retrying", "addr", ln.Addr().String(), "error", err, "pause", pause.String())
			time.Sleep(pause)
			continue
		}
		pauses.Reset()
		conns.add(c)
		go func() {
			defer conns.done(c)
			handle(c)
		}()
	}
}

// connSet tracks the open connections of ServeTCP.
type connSet struct {
	mu    sync.Mutex
	open  map[net.Conn]struct{}
	empty chan struct{} // closed when open is empty; replaced when a connection arrives
}

func newConnSet() *connSet {
	s := &connSet{open: map[net.Conn]struct{}{}, empty: make(chan struct{})}
	close(s.empty)
	return s
}

func (s *connSet) add(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) == 0 {
		s.empty = make(chan struct{})
	}
	s.open[c] = struct{}{}
}

func (s *connSet) done(c net.Conn) {
	c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.open[c]; !ok {
		return
	}
	delete(s.open, c)
	if len(s.open) == 0 {
		close(s.empty)
	}
}

// idle is closed once no connection is open (call it after the listener is closed).
func (s *connSet) idle() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.empty
}

// closeAll closes every open connection and says how many there were.
func (s *connSet) closeAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.open {
		c.Close()
	}
	return len(s.open)
}
