// Package logsink owns how a long-running zero502 service's log lines reach their file: in
// batches. A busy edge writes one line per connection and the LB's access log one per request;
// written one by one, that is one write(2) per line, as many system calls as the connection
// itself costs in accepts or connects. A Sink holds lines for at most its delay (100 ms by
// default) or until 64 KiB wait, and writes them in one call.
//
// Nothing that matters waits: Handler flushes after every record at warning level or above, so
// a warning or an error is on disk when the call that logged it returns, with every line logged
// before it. The services' commands Close the sink as they exit. What a batch costs is what a
// SIGKILL or a crash catches in it: at most the last delay's info lines.
package logsink

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// defaultDelay is the longest a line waits in a Sink made by New with a zero delay: below what
// anyone tailing the log notices, and enough to gather a busy second's lines into ten writes.
const defaultDelay = 100 * time.Millisecond

// maxBatch is how many bytes a Sink gathers before it writes at once, whatever the delay.
const maxBatch = 64 << 10

// Sink is an io.Writer that batches whole lines (slog's handlers write one record per Write)
// and passes them to the underlying writer in order. It is safe for concurrent use.
type Sink struct {
	w     io.Writer
	delay time.Duration
	clk   clock.Clock

	mu     sync.Mutex
	buf    []byte
	armed  bool  // a flush is scheduled for the lines in buf
	closed bool  // Close ran: writes pass straight through
	err    error // the last failed write of a batch, returned by the next Write or Flush
}

// New is a Sink over w whose lines wait at most delay (defaultDelay when delay is 0). clk is
// the time source of the delay (clock.Real{} when nil).
func New(w io.Writer, delay time.Duration, clk clock.Clock) *Sink {
	if delay <= 0 {
		delay = defaultDelay
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Sink{w: w, delay: delay, clk: clk}
}

// Write queues p (one log line) behind the lines already waiting. It writes the batch at once
// when it reaches 64 KiB, and after Close it writes p straight away. An error is a failed
// earlier batch: the lines of that batch are lost, p is kept.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.w.Write(p)
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) >= maxBatch {
		return len(p), s.flushLocked()
	}
	if !s.armed {
		s.armed = true
		wake := s.clk.After(s.delay)
		go func() {
			<-wake
			s.mu.Lock()
			defer s.mu.Unlock()
			s.writeLocked() // a failure waits in s.err for the next Write or Flush: the timer has no one to tell
		}()
	}
	err := s.err
	s.err = nil
	return len(p), err
}

// Flush writes the waiting lines now.
func (s *Sink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

func (s *Sink) flushLocked() error {
	s.writeLocked()
	err := s.err
	s.err = nil
	return err
}

// writeLocked writes the waiting lines, keeping a failure in s.err.
func (s *Sink) writeLocked() {
	s.armed = false // a timer that fires later finds nothing, or the next batch's first lines
	if len(s.buf) > 0 {
		_, err := s.w.Write(s.buf)
		s.buf = s.buf[:0]
		if err != nil {
			s.err = err
		}
	}
}

// Close writes the waiting lines; lines written after it go straight through.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.flushLocked()
}

// Handler wraps h, which writes to this sink, so that a record at level urgent or above is
// flushed before Handle returns, together with every line that waited before it.
func (s *Sink) Handler(h slog.Handler, urgent slog.Level) slog.Handler {
	return &handler{Handler: h, sink: s, urgent: urgent}
}

// handler is Sink.Handler's slog.Handler.
type handler struct {
	slog.Handler
	sink   *Sink
	urgent slog.Level
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= h.urgent {
		if ferr := h.sink.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{Handler: h.Handler.WithAttrs(attrs), sink: h.sink, urgent: h.urgent}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{Handler: h.Handler.WithGroup(name), sink: h.sink, urgent: h.urgent}
}
