package edge

import (
	"context"
	"errors"
	"net/netip"
	"sync"

	"github.com/zero502/zero502/infra/origin"
)

// Reconnecting after an ejection. A connect to an upstream that dropped off the network hangs
// (no SYN-ACK, no refusal) until the connect timeout, although its checks take it out of
// rotation well before. So when an upstream leaves rotation for failing (its checks, or a
// passive ejection after another connection's failed connect), every connect to it still in
// progress is abandoned at once for another upstream, when reconnectAfterEject allows it: a
// connection carries no client byte before it is connected, so this is as safe as the
// failover after a failed connect. Both engines ask the one rule and count and log through
// reconnecting: the event loops look at their connecting connections once the transition is
// posted to them (loop.reconnect); the goroutine path's connects register with their upstream
// (connects), and the ejection cancels the dials it abandons.

// reconnectAfterEject says a connect in progress to an upstream that has just left rotation
// for failing is abandoned for another: when an upstream in rotation that the connection has
// not tried is left. Without one the connect goes on, as before (failing open is no better a
// place). Having tried each upstream at most once, a connection reconnects at most once per
// upstream.
func (f *Forwarder) reconnectAfterEject(tried []*upstream) bool { return f.ups.healthyLeft(tried) }

// reconnecting counts and logs a connect to u abandoned after u's ejection; the caller tries the
// next upstream (u is out of rotation already: it is not ejected again).
func (f *Forwarder) reconnecting(measured netip.AddrPort, u *upstream) {
	f.ups.reconnects.Add(1)
	logger(f.Logger).Warn("edge: upstream ejected while connecting to it; trying the next", "measured", origin.LogAddr(measured),
		"origin", u.addr)
}

// abandonConnects abandons the connects in progress to u that reconnectAfterEject allows, on
// whichever engine forwards (called when u left rotation for failing).
func (f *Forwarder) abandonConnects(u *upstream) {
	u.connects.abandon(f.reconnectAfterEject)
	if ls := f.loops.Load(); ls != nil {
		ls.abandonConnects(u)
	}
}

// errAbandoned ends a connect the ejection of its upstream abandoned (goroutine path).
var errAbandoned = errors.New("connect abandoned: the upstream left rotation")

// connects are the goroutine path's connects in progress to one upstream.
type connects struct {
	mu  sync.Mutex
	set map[*connectAttempt]struct{}
}

// connectAttempt is one connect in progress: the upstreams its connection tried (this one
// included; not changed while it waits), how to cancel its dial, and whether it was abandoned.
type connectAttempt struct {
	tried     []*upstream
	cancel    context.CancelFunc
	abandoned bool // under connects.mu
}

// begin registers a connect of a connection that tried tried; its dial runs under ctx.
func (cs *connects) begin(tried []*upstream) (ctx context.Context, a *connectAttempt) {
	ctx, cancel := context.WithCancel(context.Background())
	a = &connectAttempt{tried: tried, cancel: cancel}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.set == nil {
		cs.set = map[*connectAttempt]struct{}{}
	}
	cs.set[a] = struct{}{}
	return ctx, a
}

// end unregisters a and reports whether it was abandoned.
func (cs *connects) end(a *connectAttempt) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.set, a)
	a.cancel()
	return a.abandoned
}

// abandon cancels the dial of every registered connect that may go elsewhere.
func (cs *connects) abandon(may func(tried []*upstream) bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for a := range cs.set {
		if !a.abandoned && may(a.tried) {
			a.abandoned = true
			a.cancel()
		}
	}
}
