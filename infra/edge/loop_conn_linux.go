package edge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/internal/evloop"
	"github.com/zero502/zero502/internal/rawsys"
)

// lconn is one client connection on an event loop, from its accept to its close: the upstream
// connect (with failover), the PROXY header, then the relay both ways.
type lconn struct {
	client, server side // server.fd is -1 before a connect started
	state          connState

	measured netip.AddrPort // the client, as the socket says
	local    netip.AddrPort // the address the client connected to
	start    time.Time      // accepted
	tried    []*upstream
	u        *upstream        // the upstream connected to, or being connected to
	addrs    []netip.AddrPort // the upstream's resolved addresses not tried yet (an upstream by name)
	deadline time.Time        // of the connect
	moved    time.Time        // bytes last moved either way: the idle timeout's evidence

	up, down half // client→server, server→client
	ended    int  // directions that reached EOF and were passed on
}

type connState uint8

const (
	stNew        connState = iota // accepted, no upstream picked yet
	stResolving                   // the upstream's name is being resolved (off the loop)
	stConnecting                  // a non-blocking connect is under way
	stRelaying                    // the header went out: bytes are copied both ways
	stClosed
)

// side is one socket of a connection and what its last events said.
type side struct {
	fd int
	evloop.Readiness
}

// half is one direction of a relayed connection: bytes read but not written yet (a short
// write), whether its source ended, and how many bytes it moved.
type half struct {
	pend     *[]byte // from copyBuffers, only while bytes are pending
	off, end int
	eof      bool  // the source reached EOF
	n        int64 // bytes written to the destination (the header not counted)
}

// addClient takes a new (or handed-over) client connection; the loop's Hold count and the
// loops' open count include it already.
func (l *loop) addClient(fd int, peer netip.AddrPort) {
	c := &lconn{client: side{fd: fd, Readiness: evloop.Readiness{CanWrite: true}}, server: side{fd: -1},
		measured: peer, start: l.Now(), moved: l.Now(), local: l.ls.local}
	if !c.local.IsValid() {
		c.local = rawsys.LocalAddr(fd)
	}
	if !l.ls.group.NoDelayInherited {
		rawsys.NoDelay(fd)
	}
	if err := l.register(fd, c); err != nil {
		if !errors.Is(err, evloop.ErrClosed) { // not when the loop has ended: the connection arrived too late
			l.ls.log.Error("edge: event loop cannot watch a connection", "error", err.Error())
		}
		rawsys.Close(fd)
		c.client.fd = -1
		c.state = stClosed
		l.closed()
		return
	}
	l.dial(c)
}

// dial connects c to the next upstream; when none is left (counted and logged by
// nextUpstream) it closes c.
func (l *loop) dial(c *lconn) {
	for {
		u := l.f.nextUpstream(c.measured, c.tried)
		if u == nil {
			l.end(c, nil)
			return
		}
		c.tried = append(c.tried, u)
		c.u = u
		ap, err := netip.ParseAddrPort(u.addr)
		if err != nil {
			l.resolve(c, u)
			return
		}
		if err := l.connect(c, ap); err != nil {
			if l.f.dialFailed(c.measured, u, dialError(u.addr, err)) {
				continue
			}
			l.end(c, nil)
		}
		return
	}
}

// resolve looks the name of u up off the loop, then connects c to its addresses in turn, as
// net.Dial does (the upstream failed when none of them took the connection).
func (l *loop) resolve(c *lconn, u *upstream) {
	c.state = stResolving
	timeout := l.f.connectTimeout()
	go func() {
		host, port, _ := net.SplitHostPort(u.addr) // checkDial validated it
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var addrs []netip.AddrPort
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err == nil {
			var p uint64
			if p, err = strconv.ParseUint(port, 10, 16); err == nil {
				for _, ip := range ips {
					addrs = append(addrs, netip.AddrPortFrom(ip.Unmap(), uint16(p)))
				}
			}
		}
		if err == nil && len(addrs) == 0 {
			err = fmt.Errorf("lookup %s: no address", host)
		}
		l.post(func() {
			if c.state != stResolving {
				return // closed meanwhile
			}
			if err != nil {
				l.retry(c, l.f.dialFailed(c.measured, u, dialError(u.addr, err)))
				return
			}
			c.addrs = addrs
			l.connectNext(c, nil)
		})
	}()
}

// connectNext connects c to the next of its upstream's resolved addresses; when none is left
// the upstream failed (with the last address's error) and the next upstream is tried.
func (l *loop) connectNext(c *lconn, last error) {
	for len(c.addrs) > 0 {
		ap := c.addrs[0]
		c.addrs = c.addrs[1:]
		if last = l.connect(c, ap); last == nil {
			return
		}
	}
	c.state = stNew
	l.retry(c, l.f.dialFailed(c.measured, c.u, dialError(c.u.addr, last)))
}

// retry goes on after c's upstream failed: with the next upstream when tryNext (dialFailed),
// else it closes c.
func (l *loop) retry(c *lconn, tryNext bool) {
	if tryNext {
		l.dial(c)
		return
	}
	l.end(c, nil)
}

// connect starts a non-blocking connect of c to ap; the loop finishes it on EPOLLOUT.
func (l *loop) connect(c *lconn, ap netip.AddrPort) error {
	fd, err := rawsys.Connect(ap)
	if err != nil && !errors.Is(err, unix.EINPROGRESS) {
		return os.NewSyscallError("connect", err)
	}
	if rerr := l.register(fd, c); rerr != nil {
		rawsys.Close(fd)
		return rerr
	}
	c.server = side{fd: fd}
	c.state = stConnecting
	c.deadline = l.Now().Add(l.f.connectTimeout())
	return nil
}

// dialError is a failed connect as the goroutine path reports it: "connect: dial tcp ADDR: ...".
func dialError(addr string, err error) error {
	return fmt.Errorf("connect: %w", &net.OpError{Op: "dial", Net: "tcp", Addr: stringAddr(addr), Err: err})
}

// stringAddr is an upstream's address as a net.Addr, for errors.
type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// connectFailed drops c's server socket after a failed connect (cause: the socket's error or
// the timeout); the next resolved address of the upstream is tried, or else the upstream is
// ejected and the next one tried.
func (l *loop) connectFailed(c *lconn, cause error) {
	l.closeServer(c)
	if !errors.Is(cause, os.ErrDeadlineExceeded) {
		cause = os.NewSyscallError("connect", cause)
	}
	l.connectNext(c, cause)
}

func (l *loop) closeServer(c *lconn) {
	if c.server.fd >= 0 {
		l.slots[c.server.fd] = nil
		rawsys.Close(c.server.fd)
		c.server.fd = -1
	}
}

// abandonConnects has every loop look at its connects in progress to u, which left rotation
// for failing (reconnect.go).
func (ls *loops) abandonConnects(u *upstream) {
	for _, l := range ls.all {
		l.post(func() { l.reconnect(u) })
	}
}

// reconnect abandons the loop's connects in progress to u that reconnectAfterEject allows (its
// other resolved addresses too) and connects each to the next upstream; the others go on.
func (l *loop) reconnect(u *upstream) {
	var abandoned []*lconn
	for fd, c := range l.slots {
		if c != nil && c.client.fd == fd && c.state == stConnecting && c.u == u && l.f.reconnectAfterEject(c.tried) {
			abandoned = append(abandoned, c)
		}
	}
	for _, c := range abandoned {
		l.f.reconnecting(c.measured, u)
		l.closeServer(c)
		c.addrs, c.state = nil, stNew
		l.dial(c)
	}
}

// ready handles the events ev of descriptor fd of c.
func (l *loop) ready(c *lconn, fd int, ev uint32) {
	s := &c.client
	if fd == c.server.fd {
		s = &c.server
	}
	s.Note(ev)
	switch c.state {
	case stConnecting:
		if s == &c.server && s.CanWrite {
			if err := rawsys.SocketError(fd); err != nil {
				l.connectFailed(c, err)
			} else {
				l.connected(c)
			}
		}
	case stRelaying:
		l.relay(c)
	}
}

// connected writes the PROXY header to the upstream, with the client's bytes that have already
// arrived (one segment, as sendHeader does), and starts the relay. An upstream that does not
// take the header closes the client connection (errHeaderNotSent: its bytes may be gone).
func (l *loop) connected(c *lconn) {
	hb, err := proxyHeader(net.TCPAddrFromAddrPort(c.measured), net.TCPAddrFromAddrPort(c.local))
	if err == nil {
		err = l.sendHeader(c, hb)
	}
	if err != nil {
		l.f.headerRefused(c.measured, c.u, fmt.Errorf("%w: %w", errHeaderNotSent, err))
		l.end(c, err)
		return
	}
	l.relay(c)
}

// sendHeader writes hb and the client's first bytes, if any have arrived, to the server;
// whatever the socket does not take at once stays pending. It starts the relay.
func (l *loop) sendHeader(c *lconn, hb []byte) error {
	buf := l.buf
	k := copy(buf, hb)
	n := 0
	if c.client.CanRead {
		r, err := rawsys.Recv(c.client.fd, buf[k:])
		if err == nil && r > 0 {
			n = r
			if k+r < len(buf) && !c.client.Hup {
				c.client.CanRead = false
			}
		} else if errors.Is(err, unix.EAGAIN) {
			c.client.CanRead = false
		}
		// an EOF or an error is read again by the relay
	}
	w, err := rawsys.Send(c.server.fd, buf[:k+n])
	if errors.Is(err, unix.EAGAIN) {
		w, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("write the PROXY header to %s: %w", c.u.addr, os.NewSyscallError("write", err))
	}
	c.state = stRelaying
	c.u.open.Add(1)
	c.moved = l.Now()
	c.up.n = int64(w - k) // the client's bytes written (below 0 while the header is not): the pending rest adds up to n
	if w < k+n {
		c.server.CanWrite = false
		c.up.stash(buf[w : k+n])
	}
	return nil
}

// stash keeps p, which the destination did not take yet.
func (h *half) stash(p []byte) {
	h.pend = copyBuffers.Get().(*[]byte)
	h.off, h.end = 0, copy(*h.pend, p)
}

// relay moves what it can both ways, and ends c when both directions have ended or one failed.
func (l *loop) relay(c *lconn) {
	err := l.pump(c, &c.up, &c.client, &c.server, true)
	if err == nil {
		err = l.pump(c, &c.down, &c.server, &c.client, false)
	}
	if err != nil || c.ended == 2 {
		l.end(c, err)
	}
}

// pump copies from src to dst until src has nothing more or dst takes nothing more; at src's
// EOF it passes the half-close on (unless the other direction ended already: both sockets are
// about to close). It returns why the connection must end, or nil.
func (l *loop) pump(c *lconn, h *half, src, dst *side, up bool) error {
	for {
		if h.pend != nil {
			if !dst.CanWrite {
				return nil
			}
			w, err := rawsys.Send(dst.fd, (*h.pend)[h.off:h.end])
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				return writeError(up, err)
			}
			if w > 0 {
				h.off += w
				h.n += int64(w)
				c.moved = l.Now()
			}
			if h.off < h.end {
				dst.CanWrite = false
				return nil
			}
			copyBuffers.Put(h.pend)
			h.pend = nil
		}
		if h.eof {
			return nil
		}
		if !src.CanRead {
			return nil
		}
		k, err := rawsys.Recv(src.fd, l.buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			src.CanRead = false
			return nil
		case err != nil:
			return readError(up, err)
		case k == 0:
			h.eof = true
			if c.ended++; c.ended == 1 {
				rawsys.ShutdownWrite(dst.fd)
			}
			return nil
		}
		c.moved = l.Now()
		if k < len(l.buf) && !src.Hup {
			src.CanRead = false // drained: the next byte (or the FIN) raises a new edge
		}
		w := 0
		if dst.CanWrite {
			w, err = rawsys.Send(dst.fd, l.buf[:k])
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				return writeError(up, err)
			}
			w = max(w, 0)
			h.n += int64(w)
		}
		if w < k {
			dst.CanWrite = false
			h.stash(l.buf[w:k])
			return nil
		}
	}
}

func readError(up bool, err error) error {
	if up {
		return fmt.Errorf("read from the client: %w", os.NewSyscallError("read", err))
	}
	return fmt.Errorf("read from the server: %w", os.NewSyscallError("read", err))
}

func writeError(up bool, err error) error {
	if up {
		return fmt.Errorf("write to the server: %w", os.NewSyscallError("write", err))
	}
	return fmt.Errorf("write to the client: %w", os.NewSyscallError("write", err))
}

// end closes both sides of c, once, with cause (nil: both directions finished), and accounts
// for it as the goroutine path does (relayed) when it was relayed.
func (l *loop) end(c *lconn, cause error) {
	if c.state == stClosed {
		return
	}
	relayed := c.state == stRelaying
	c.state = stClosed
	var local net.Addr
	if relayed && c.up.n > 0 {
		local = net.TCPAddrFromAddrPort(rawsys.LocalAddr(c.server.fd))
	}
	l.closeServer(c)
	if c.client.fd >= 0 {
		l.slots[c.client.fd] = nil
		rawsys.Close(c.client.fd)
		c.client.fd = -1
	}
	for _, h := range []*half{&c.up, &c.down} {
		if h.pend != nil {
			copyBuffers.Put(h.pend)
			h.pend = nil
		}
	}
	if relayed {
		if local == nil {
			local = stringAddr("")
		}
		l.f.relayed(c.measured, c.u, local, flow{up: c.up.n, down: c.down.n, err: cause}, c.start)
	}
	l.closed()
}
