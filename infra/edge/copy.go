package edge

import (
	"errors"
	"fmt"
	"io"
	"net"
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

// idleChecks is how many times per idle timeout the watchdog looks at a connection: a silent
// connection is closed between 1 and 1+1/idleChecks idle timeouts after its last byte.
const idleChecks = 4

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
//
// The byte path has no deadline on any read or write: silence is watched by one timer per
// connection (see watch) that reads a shared counter, so a request costs, per direction, the
// read, the write and the read that finds the socket empty. (Skipping that last read, as HAProxy
// does, needs the poller's event mask: a short read does not say whether a FIN came with it, and
// Go's poller does not tell.)
func splice(client, server net.Conn, idle time.Duration) flow {
	s := &splicer{client: client, server: server}
	if idle > 0 {
		defer s.watch(idle)()
	}
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
	client, server net.Conn
	moved          atomic.Uint64 // reads and writes that moved bytes, either way: the watchdog's evidence
	ended          atomic.Int32  // directions that reached EOF

	once  sync.Once
	cause error // the first error that ended the splice early; set in once
}

// watch closes both connections once nothing has moved either way for idle. It looks every
// idle/idleChecks and closes after idleChecks looks in a row saw no movement, so a connection is
// never closed before idle of silence and always by (1+1/idleChecks)×idle. A write blocked on a
// peer that does not read counts when it completes: a peer that takes longer than idle to take
// one buffer (32 KiB) is treated as silent. It returns the function that stops the watch.
func (s *splicer) watch(idle time.Duration) (stop func()) {
	w := &watchdog{s: s, every: max(idle/idleChecks, time.Millisecond)}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(w.every, w.look)
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stopped = true
		w.timer.Stop()
	}
}

// watchdog is the idle check of one splice.
type watchdog struct {
	s     *splicer
	every time.Duration

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	seen    uint64 // moved at the last look
	quiet   int    // looks in a row that saw nothing move
}

// look is one check; it re-arms itself until the splice ends or goes silent.
func (w *watchdog) look() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if m := w.s.moved.Load(); m != w.seen {
		w.seen, w.quiet = m, 0
	} else if w.quiet++; w.quiet >= idleChecks {
		w.s.abort(errIdle)
		return
	}
	w.timer.Reset(w.every)
}

// abort closes both connections, once, recording why (nil: both directions finished).
func (s *splicer) abort(cause error) {
	s.once.Do(func() {
		s.cause = cause
		_ = s.client.Close()
		_ = s.server.Close()
	})
}

// pump copies src to dst until src ends, then half-closes dst; it returns the bytes written to
// dst.
func (s *splicer) pump(dst, src net.Conn) (int64, error) {
	pb := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(pb)
	n, err := s.copy(dst, src, *pb)
	if err != nil {
		s.abort(err)
		return n, err
	}
	// The last direction to end skips the half-close: both sides are closed right after, and
	// the close sends the same FIN (the other side's bytes were all read).
	if s.ended.Add(1) == 1 {
		closeWrite(dst)
	}
	return n, nil
}

// copy copies src to dst with Read and Write until src's EOF (nil) or an error.
func (s *splicer) copy(dst, src net.Conn, buf []byte) (int64, error) {
	var n int64
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			if err := s.write(dst, buf[:k], &n); err != nil {
				return n, err
			}
		}
		switch {
		case rerr == nil:
			continue
		case errors.Is(rerr, io.EOF):
			return n, nil
		}
		return n, fmt.Errorf("read from %s: %w", src.RemoteAddr(), rerr)
	}
}

// write writes all of p to dst, counting into n and into the watchdog's evidence.
func (s *splicer) write(dst net.Conn, p []byte, n *int64) error {
	s.moved.Add(1)
	w, err := dst.Write(p)
	*n += int64(w)
	s.moved.Add(1)
	if err != nil {
		return fmt.Errorf("write to %s: %w", dst.RemoteAddr(), err)
	}
	return nil
}

// closeWriter is a connection that can half-close (*net.TCPConn, *origin.Conn).
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
