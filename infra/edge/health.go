package edge

import (
	"errors"
	"net"
	"time"
)

// The edge's health probe is a TCP listener (Forwarder.Health): the DNS health checker connects
// to it, and a connection accepted is the answer. It accepts while the edge forwards and is closed
// when the drain starts, so checks are refused and the edge leaves the A set while it still
// forwards (invariant I6). Draining reports the same state in process.

// HealthAddr is the health listener's address, or nil when there is none (after Open).
func (f *Forwarder) HealthAddr() net.Addr {
	if f.health == nil {
		return nil
	}
	return f.health.Addr()
}

func (f *Forwarder) healthString() string {
	if f.health == nil {
		return ""
	}
	return f.health.Addr().String()
}

// closeHealth makes health checks fail: the listener is closed, connections are refused.
func (f *Forwarder) closeHealth() {
	if f.health != nil {
		f.healthOnce.Do(func() { _ = f.health.Close() })
	}
}

// acceptAndClose is the TCP health listener: a connection that is accepted is the answer. It
// returns when ln is closed.
func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // transient (out of descriptors): try again
			continue
		}
		_ = c.Close()
	}
}
