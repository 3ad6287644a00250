package app

import (
	"context"
	"net/http"
	"sync"

	"github.com/coder/websocket"
)

// sessions are the app's open WebSocket echo sessions (GET /ws): the long-lived connection a
// chat or a live feed holds through the balancer. The drain ends them cleanly, with a close
// frame 1001 (going away), when its window is over and the balancer no longer sends this app
// anything new: a client reopens its session through the balancer onto a host still serving.
type sessions struct {
	mu     sync.Mutex
	open   map[*websocket.Conn]struct{}
	closed bool // the drain's window is over: a new session is refused with 1001
}

// add records c; false once the sessions were ended by the drain.
func (s *sessions) add(c *websocket.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.open == nil {
		s.open = map[*websocket.Conn]struct{}{}
	}
	s.open[c] = struct{}{}
	return true
}

func (s *sessions) remove(c *websocket.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, c)
}

// end sends every open session a close frame 1001 and refuses new ones.
func (s *sessions) end() {
	s.mu.Lock()
	s.closed = true
	open := make([]*websocket.Conn, 0, len(s.open))
	for c := range s.open {
		open = append(open, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Close(websocket.StatusGoingAway, "draining")
		}()
	}
	wg.Wait()
}

// ws is GET /ws: a WebSocket session that echoes every message back.
func (a *App) ws(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the client
	}
	if !a.sessions.add(c) {
		_ = c.Close(websocket.StatusGoingAway, "draining")
		return
	}
	defer a.sessions.remove(c)
	ctx := context.WithoutCancel(r.Context())
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := c.Write(ctx, typ, msg); err != nil {
			return
		}
	}
}
