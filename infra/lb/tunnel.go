package lb

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/http1"
)

// tunnels are the upgraded connections (101 Switching Protocols, WebSockets) in progress. Such
// a connection has left the HTTP exchange for good: it never returns to a pool or carries
// another request. The drain gives it the shutdown budget, then ends it with a FIN each way.
type tunnels struct {
	mu    sync.Mutex
	open  map[*tunnel]struct{}
	total atomic.Uint64 // upgrades relayed since the start
}

// tunnel is one upgraded client connection and its backend connection.
type tunnel struct {
	client, backend clientSocket
	// idle is how long both directions may be silent (Settings.TunnelIdleTimeout).
	idle time.Duration
	// moved is when a byte last moved either way; until, once set, when the tunnel must end
	// (a FIN passed on, or the drain's); both Unix nanoseconds.
	moved, until atomic.Int64
}

func (ts *tunnels) add(t *tunnel) {
	ts.total.Add(1)
	ts.mu.Lock()
	if ts.open == nil {
		ts.open = map[*tunnel]struct{}{}
	}
	ts.open[t] = struct{}{}
	ts.mu.Unlock()
}

func (ts *tunnels) remove(t *tunnel) {
	ts.mu.Lock()
	delete(ts.open, t)
	ts.mu.Unlock()
}

// count is how many tunnels are open.
func (ts *tunnels) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.open)
}

// shut ends every open tunnel cleanly: a FIN to both peers, then linger more to let them answer
// with theirs before the connections close.
func (ts *tunnels) shut(linger time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	at := time.Now().Add(linger)
	for t := range ts.open {
		_ = t.client.CloseWrite()
		_ = t.backend.CloseWrite()
		t.endBy(at)
	}
}

// tunnelLinger is how long one side of a tunnel may stay open after the other finished (its
// FIN passed on), and after the drain's FINs.
const tunnelLinger = 2 * time.Second

// tunnel relays the 101 response head in x.resp (still buffered in u) to the client and then
// bytes both ways (spliced by the kernel where it can) until both directions ended. The head
// keeps the end-to-end headers and says Connection: Upgrade with the backend's Upgrade.
func (s *Server) tunnel(cc *clientConn, x *exchange, b *Backend, u *upstream, start time.Time) {
	resp := &x.resp
	out := http1.AppendClientHead(x.out[:0], resp, false, false)
	out = out[:len(out)-2] // before the empty line
	out = append(out, "Connection: Upgrade\r\n"...)
	if v, ok := resp.Get("Upgrade"); ok {
		out = append(out, "Upgrade: "...)
		out = append(out, v...)
		out = append(out, "\r\n"...)
	}
	out = append(out, "\r\n"...)
	u.in.consume(len(resp.Head))
	out = append(out, u.in.buffered()...) // what the backend sent after its 101
	u.in.consume(len(u.in.buffered()))
	early := append([]byte(nil), cc.in.buffered()...) // what the client sent after its request
	cc.in.consume(len(early))
	s.logAccess(cc.ip, &x.req, 101, b, start)

	t := &tunnel{client: cc.conn, backend: u.conn, idle: s.set.TunnelIdleTimeout}
	t.moved.Store(time.Now().UnixNano())
	s.tunnels.add(t)
	defer s.tunnels.remove(t)
	defer u.close()
	_ = cc.conn.SetDeadline(time.Time{})
	_ = u.conn.SetDeadline(time.Time{})
	_ = cc.conn.SetWriteDeadline(time.Now().Add(s.set.BodyTimeout))
	_, err := cc.conn.Write(out)
	x.out = out[:0]
	cc.in.release()
	u.in.buf = nil
	if err != nil {
		return
	}
	_ = cc.conn.SetWriteDeadline(time.Time{})
	if len(early) > 0 {
		if _, err := u.conn.Write(early); err != nil {
			return
		}
	}
	broken := func() { // broken or idle: both directions end
		_ = cc.conn.Close()
		_ = u.conn.Close()
	}
	up := make(chan struct{})
	go func() {
		defer close(up)
		if err := t.pipe(u.conn, cc.conn); err != nil {
			broken()
		}
	}()
	if err := t.pipe(cc.conn, u.conn); err != nil {
		broken()
	}
	<-up
}

// endBy makes both directions end by at (the earliest of the times asked wins).
func (t *tunnel) endBy(at time.Time) {
	for {
		cur := t.until.Load()
		if cur != 0 && cur <= at.UnixNano() {
			return
		}
		if t.until.CompareAndSwap(cur, at.UnixNano()) {
			_ = t.client.SetReadDeadline(at)
			_ = t.backend.SetReadDeadline(at)
			return
		}
	}
}

// errTunnelIdle ends a tunnel silent both ways for its idle timeout.
var errTunnelIdle = errors.New("upgraded connection idle in both directions")

// pipe copies src to dst until src ends (spliced by the kernel between two TCP sockets on
// Linux; a TLS client's bytes are copied), then passes the end on with a FIN and gives dst tunnelLinger to finish its side. It
// copies in steps of a quarter of the idle timeout (a read deadline on src): at each step it
// ends the tunnel if nothing moved either way for the idle timeout, or the tunnel's end time
// passed. It returns nil when src ended cleanly.
func (t *tunnel) pipe(dst, src clientSocket) error {
	step := max(t.idle/4, 10*time.Millisecond)
	for {
		deadline := time.Now().Add(step)
		if until := t.until.Load(); until != 0 && until < deadline.UnixNano() {
			deadline = time.Unix(0, until)
		}
		_ = src.SetReadDeadline(deadline)
		n, err := io.Copy(dst, src)
		now := time.Now()
		if n > 0 {
			t.moved.Store(now.UnixNano())
		}
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if until := t.until.Load(); until != 0 && now.UnixNano() >= until {
			return err
		}
		if now.Sub(time.Unix(0, t.moved.Load())) >= t.idle {
			return errTunnelIdle
		}
	}
	t.endBy(time.Now().Add(tunnelLinger))
	return dst.CloseWrite()
}
