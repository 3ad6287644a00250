package edge

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// errIdle ends a spliced connection on which nothing moved, in either direction, for the idle
// timeout.
var errIdle = errors.New("idle timeout: no bytes in either direction")

// copyBufferSize is the buffer of each direction of a spliced connection.
const copyBufferSize = 32 << 10

// copyBuffers are the directions' buffers, reused: a short connection (a new one per request)
// would otherwise allocate 64 KiB and keep the garbage collector busy at thousands a second.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// flow is what one spliced connection moved and how it ended.
type flow struct {
	up   int64 // bytes from the client side to the server side (after any PROXY header)
	down int64 // bytes from the server side to the client side
	err  error // why it ended early: nil when both directions reached EOF
}

// end is the flow's ending for a log line.
func (f flow) end() string {
	if f.err == nil {
		return "closed"
	}
	return f.err.Error()
}

// splice copies bytes both ways between client and server until both directions have ended,
// then closes both. An EOF in one direction is passed on as a half-close (CloseWrite on the
// other side) while the other direction goes on. Idle is the longest silence allowed across
// both directions together, not the total duration: a direction waiting on a read or write keeps
// waiting as long as the other moved bytes within idle (0: no limit). Any other error, or the
// idle timeout, closes both connections at once.
func splice(client, server net.Conn, idle time.Duration) flow {
	s := &splicer{idle: idle, start: time.Now(), client: client, server: server}
	var f flow
	upDone := make(chan error, 1)
	go func() {
		var err error
		f.up, err = s.pump(server, client)
		upDone <- err
	}()
	var downErr error
	f.down, downErr = s.pump(client, server)
	upErr := <-upDone
	s.abort(nil)
	f.err = s.cause
	if f.err == nil {
		f.err = errors.Join(upErr, downErr)
	}
	return f
}

// splicer is the state both directions of one splice share.
type splicer struct {
	idle           time.Duration
	start          time.Time
	last           atomic.Int64 // time.Since(start) of the last byte moved, either way
	client, server net.Conn

	once  sync.Once
	cause error // the first error that ended the splice early; set in once
}

// touch records that bytes just moved.
func (s *splicer) touch() { s.last.Store(int64(time.Since(s.start))) }

// left is how much of the idle timeout remains since the last byte moved either way.
func (s *splicer) left() time.Duration {
	return s.idle - (time.Since(s.start) - time.Duration(s.last.Load()))
}

// abort closes both connections, once, recording why (nil: both directions finished).
func (s *splicer) abort(cause error) {
	s.once.Do(func() {
		s.cause = cause
		_ = s.client.Close()
		_ = s.server.Close()
	})
}

// pump copies src to dst until src ends; it returns the bytes written to dst.
func (s *splicer) pump(dst, src net.Conn) (int64, error) {
	pb := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(pb)
	buf := *pb
	var n int64
	if s.idle > 0 {
		_ = src.SetReadDeadline(time.Now().Add(s.idle))
	}
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			s.touch()
			if err := s.write(dst, buf[:k], &n); err != nil {
				s.abort(err)
				return n, err
			}
		}
		switch {
		case rerr == nil:
			continue
		case errors.Is(rerr, io.EOF):
			closeWrite(dst)
			return n, nil
		case s.idle > 0 && errors.Is(rerr, os.ErrDeadlineExceeded):
			if left := s.left(); left > 0 {
				_ = src.SetReadDeadline(time.Now().Add(left))
				continue
			}
			s.abort(errIdle)
			return n, errIdle
		}
		err := fmt.Errorf("read from %s: %w", src.RemoteAddr(), rerr)
		s.abort(err)
		return n, err
	}
}

// write writes all of p to dst, counting into n; a blocked write gives up only once nothing has
// moved either way for the idle timeout.
func (s *splicer) write(dst net.Conn, p []byte, n *int64) error {
	wait := s.idle
	for len(p) > 0 {
		if s.idle > 0 {
			_ = dst.SetWriteDeadline(time.Now().Add(wait))
		}
		w, err := dst.Write(p)
		*n += int64(w)
		p = p[w:]
		wait = s.idle
		if w > 0 {
			s.touch()
		}
		if err == nil {
			continue
		}
		if s.idle > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			if left := s.left(); left > 0 {
				wait = left
				continue
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errIdle
		}
		return fmt.Errorf("write to %s: %w", dst.RemoteAddr(), err)
	}
	return nil
}

// closeWriter is a connection that can half-close (*net.TCPConn, *OriginConn).
type closeWriter interface{ CloseWrite() error }

// closeWrite half-closes c when it can: its peer reads EOF, the other direction goes on.
func closeWrite(c net.Conn) {
	if cw, ok := c.(closeWriter); ok {
		_ = cw.CloseWrite()
	}
}

// orDefault is d, or def when d is not set (zero or negative).
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
