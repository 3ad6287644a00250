package edge

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/backoff"
)

// The edge's health probe is a TCP listener (Forwarder.Health): the DNS health checker connects
// to it, and a connection accepted is the answer. It listens while the edge forwards and at
// least one upstream is in rotation; it is closed (connections refused) while no upstream is in
// rotation (from Open until the first good check of an upstream, too), and for good when the
// drain starts, so the edge leaves the A set while it still forwards (invariant I6). Draining
// reports the drain in process.

// healthGate is the health listener, opened and closed as the edge's health changes.
type healthGate struct {
	log *slog.Logger

	mu   sync.Mutex
	addr string       // the address it listens on (the resolved one after the first listen)
	ln   net.Listener // nil while closed
	shut bool         // the drain started: closed for good
}

// openHealth makes the gate of addr, closed: it opens with the first upstream in rotation (set).
// It listens once, so that an address it cannot take fails at once and a port 0 is chosen; an
// empty addr is no health listener (nil).
func openHealth(addr string) (*healthGate, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := listenReusePort(addr)
	if err != nil {
		return nil, err
	}
	g := &healthGate{addr: ln.Addr().String()}
	_ = ln.Close()
	return g, nil
}

// set opens or closes the listener: open when healthy says so, asked under the lock so that
// concurrent changes cannot apply out of order. A listener that cannot be
// opened again (the port taken meanwhile) is logged and tried again at the next change.
func (g *healthGate) set(healthy func() bool) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.shut:
	case healthy() && g.ln == nil:
		ln, err := listenReusePort(g.addr)
		if err != nil {
			g.log.Error("edge: cannot reopen the health listener; the edge looks down to the DNS health checker", "health", g.addr, "error", err.Error())
			return
		}
		g.ln = ln
		go acceptAndClose(ln)
		g.log.Info("edge health listener open: an upstream is in rotation", "health", g.addr)
	case g.ln != nil && !healthy():
		_ = g.ln.Close()
		g.ln = nil
		g.log.Warn("edge health listener closed: no upstream in rotation", "health", g.addr)
	}
}

// close closes the listener for good (the drain).
func (g *healthGate) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = true
	if g.ln != nil {
		_ = g.ln.Close()
		g.ln = nil
	}
}

// HealthAddr is the health listener's address, or nil when there is none (after Open).
func (f *Forwarder) HealthAddr() net.Addr {
	if f.health == nil {
		return nil
	}
	a, _ := net.ResolveTCPAddr("tcp", f.health.addr)
	return a
}

func (f *Forwarder) healthString() string {
	if f.health == nil {
		return ""
	}
	return f.health.addr
}

// Healthy reports what the health listener says: not draining, and an upstream in rotation.
func (f *Forwarder) Healthy() bool { return !f.Draining() && f.ups.inRotation() > 0 }

// acceptAndClose is the TCP health listener: a connection that is accepted is the answer. It
// returns when ln is closed.
func acceptAndClose(ln net.Listener) {
	var pause backoff.AcceptPause
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(pause.Next()) // transient (out of descriptors): try again
			continue
		}
		pause.Reset()
		_ = c.Close()
	}
}
