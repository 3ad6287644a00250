package lb

import "time"

// handOff gives c, its buffered request unread, to the goroutine path.
func (l *loop) handOff(c *lclient) {
	since := c.start
	if c.phase != phBodyWait {
		since = time.Time{}
	}
	cc, ok := l.toClientConn(c)
	if !ok {
		return
	}
	cc.since = since
	go l.s.serveConn(cc, true)
}

// handOffRelay gives an exchange whose response head arrived (chunked or close-delimited) to
// the goroutine path's relay; the connection stays there afterwards until it goes idle.
func (l *loop) handOffRelay(c *lclient, u *lup) {
	x, b, reqLen, start := c.x, c.b, c.reqLen, c.start
	buf := u.in
	c.u, u.c = nil, nil
	tc, err := l.netConn(u.fd)
	u.fd = -1
	c.x, c.b = nil, nil
	if err != nil { // the backend's answer is counted (readHead); the LB could not pass it on
		b.inFlight.Add(-1)
		putExchange(x)
		l.closeClient(c)
		return
	}
	raw, err := tc.SyscallConn()
	cc, ok := l.toClientConn(c)
	if !ok || err != nil {
		_ = tc.Close()
		b.inFlight.Add(-1)
		putExchange(x)
		if ok {
			l.s.closeConn(cc)
		}
		return
	}
	up := &upstream{conn: tc, raw: raw, backend: b, in: buf}
	up.in.conn = tc
	go func() {
		keep := l.s.relay(cc, x, b, up, start)
		b.inFlight.Add(-1)
		cc.in.consume(reqLen)
		putExchange(x)
		if !keep {
			l.s.closeConn(cc)
			return
		}
		l.s.serveConn(cc, false)
	}()
}

// toClientConn moves c to the goroutine path as a clientConn with c's buffer; false when that
// failed (c is closed).
func (l *loop) toClientConn(c *lclient) (*clientConn, bool) {
	if c.x != nil {
		putExchange(c.x)
		c.x = nil
	}
	tc, err := l.netConn(c.fd)
	c.closed = true
	l.ls.handoffs.Add(1)
	if err != nil {
		l.count(-1)
		l.s.log.Warn("hand-off to the goroutine path failed", "err", err)
		return nil, false
	}
	cc := newClientConn(tc)
	cc.ip = c.ip
	cc.in.buf, cc.in.pbuf, cc.in.r, cc.in.w = c.in.buf, c.in.pbuf, c.in.r, c.in.w
	c.in = reader{} // the buffer moved with the connection
	// Tracked by the goroutine path before the loop stops counting it: a drain waiting for the
	// connections to go never sees it in neither count while its request is under way.
	tracked := l.s.track(cc)
	l.count(-1)
	if !tracked {
		cc.in.release()
		_ = tc.Close()
		return nil, false
	}
	return cc, true
}
