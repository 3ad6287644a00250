//go:build linux

package evloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/internal/rawsys"
)

// EdgeTriggered are the events a loop's connection sockets are registered for: reading, writing
// and the peer's half-close, edge-triggered. A consumer reads and writes such a socket until a
// short read or write (or EAGAIN), and the next edge tells it when to go on.
const EdgeTriggered = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// Readiness is what a loop knows of a socket registered edge-triggered (EdgeTriggered): an
// event sets a flag (Note), and the consumer clears it on a short read or write, or EAGAIN; the
// next edge sets it again.
type Readiness struct {
	CanRead  bool // a read may find bytes, or the EOF
	CanWrite bool // a write may go through
	// Hup: the peer closed its side, or the socket failed: reads go on until the EOF, never
	// stopping at a short read (no edge would come for the rest)
	Hup bool
}

// Note records the events ev of an epoll event.
func (r *Readiness) Note(ev uint32) {
	r.CanRead = r.CanRead || ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	r.CanWrite = r.CanWrite || ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0
	r.Hup = r.Hup || ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
}

// YieldEvery is how often a busy loop passes through the Go scheduler: as seldom as the runtime
// allows without preempting it (its monitor does after 10 ms without a pass, counted from when
// it noticed the last one, so never sooner), with 2 ms for the events of one round. A goroutine
// that is preempted that way keeps the monitor waking up every 20 µs for a while. A pass is not
// cheap either: runtime.Gosched queues the loop on the global run queue and wakes a thread for
// the spare P (lb_runtime.go in cmd/zero502), which often takes the loop over while this thread
// goes to sleep; profiled in the LB, passes every 5 ms cost about 8% of a loop's CPU. The
// edge's loops passed every 5 ms before they ran here; nothing in them depends on the period.
const YieldEvery = 8 * time.Millisecond

// acceptPause is how long a loop stops accepting after accept failed for lack of descriptors or
// memory: the listener is level-triggered, and would wake the loop in vain meanwhile. The next
// sweep after it resumes.
const acceptPause = 100 * time.Millisecond

// The tokens of a loop's own descriptors; a consumer's tokens have the top bit clear.
const (
	wakeToken     = 1 << 63
	listenerToken = 1<<63 | 1
)

// ErrClosed is what Add returns on a Loop that was closed.
var ErrClosed = errors.New("event loop closed")

// Options are a loop's settings, the same for every loop of a Group.
type Options struct {
	// Sweep is the period of the Handler's Sweep, and the longest a loop waits in epoll_wait.
	// At least a millisecond; 0 is 100 ms.
	Sweep time.Duration
	// AcceptBatch bounds the connections one wake-up accepts, so that the loop's connections
	// are served between bursts (the listener is level-triggered: the rest wake the loop again
	// after its other events). 0 is 64.
	AcceptBatch int
	// Log receives the errors a loop survives (epoll_wait, accept), as Log.Error or Log.Warn
	// with LogPrefix before the message and the error under ErrKey ("error" when empty).
	Log       *slog.Logger
	LogPrefix string
	ErrKey    string
}

func (o Options) withDefaults() Options {
	if o.Sweep == 0 {
		o.Sweep = 100 * time.Millisecond
	}
	o.Sweep = max(o.Sweep, time.Millisecond)
	if o.AcceptBatch <= 0 {
		o.AcceptBatch = 64
	}
	if o.ErrKey == "" {
		o.ErrKey = "error"
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

// Handler is what a consumer does with a loop's news; Run calls each function on the loop's
// goroutine, one at a time. The optional ones may be nil.
type Handler struct {
	// Accept takes a connection the loop accepted: fd is non-blocking and close-on-exec, peer
	// its address (valid during the call only). The consumer owns fd; it registers it with Add
	// when it wants its events.
	Accept func(fd int, peer *unix.RawSockaddrAny)
	// MayAccept, optional, is asked before each batch of accepts: false leaves the connections
	// waiting in the listen queue (for another process holding the socket, or its close).
	MayAccept func() bool
	// Accepted, optional, runs after each batch of accepts (even an empty one).
	Accepted func()
	// Event reports the events of a descriptor registered with Add under token.
	Event func(token uint64, events uint32)
	// Woken runs after Poke; pokes that come before it runs make one call.
	Woken func()
	// Settle, optional, runs after the events of each round, and after each Sweep.
	Settle func()
	// Sweep runs every Options.Sweep or so (on a busy loop, after the round that passes it).
	Sweep func()
}

// Loop is one event loop: an epoll set, its wake-up eventfd and its copy of the listener.
// Everything but Poke belongs to the goroutine that runs it (and, before Run or after it
// returned, to whoever holds it).
type Loop struct {
	opts   Options
	epfd   int
	lfd    int // the loop's duplicate of the listener; -1 when it does not, or no longer, accept
	paused time.Time
	now    time.Time
	rsa    unix.RawSockaddrAny // accept's peer address, kept here so that it is not allocated

	held atomic.Int64 // connections the consumer holds on the loop (Hold)

	mu   sync.Mutex // Poke against Close: once closed, the wake-up's number may be another file's
	wake int        // eventfd; -1 once closed
}

// New creates a loop. With listenFD >= 0 the loop accepts from its own duplicate of that
// listening socket, registered with EPOLLEXCLUSIVE; with -1 it only serves the descriptors the
// consumer adds.
func New(listenFD int, opts Options) (*Loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	l := &Loop{opts: opts.withDefaults(), epfd: epfd, wake: -1, lfd: -1, now: time.Now()}
	l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err == nil {
		err = l.ctl(unix.EPOLL_CTL_ADD, l.wake, unix.EPOLLIN, wakeToken)
	}
	if err == nil && listenFD >= 0 {
		l.lfd, err = unix.FcntlInt(uintptr(listenFD), unix.F_DUPFD_CLOEXEC, 0)
		if err == nil {
			err = l.watchListener()
		}
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("event loop: %w", err)
	}
	return l, nil
}

// EpollFD is the loop's epoll descriptor (-1 once closed).
func (l *Loop) EpollFD() int { return l.epfd }

// Now is the time the loop's current round began (taken once per epoll_wait).
func (l *Loop) Now() time.Time { return l.now }

// Accepting reports whether the loop still holds its listener copy.
func (l *Loop) Accepting() bool { return l.lfd >= 0 }

// Hold adds d to the connections the consumer holds on the loop, or has queued for it: the
// measure Group.LeastLoaded compares. Any goroutine may call it.
func (l *Loop) Hold(d int64) { l.held.Add(d) }

// Held is the count Hold keeps.
func (l *Loop) Held() int64 { return l.held.Load() }

// Add registers fd in the loop's epoll set for events, reported to Handler.Event with token
// (its top bit clear; a consumer usually gives fd itself).
func (l *Loop) Add(fd int, events uint32, token uint64) error {
	if l.epfd < 0 {
		return ErrClosed
	}
	return l.ctl(unix.EPOLL_CTL_ADD, fd, events, token)
}

// Del takes fd out of the loop's epoll set (closing fd does too).
func (l *Loop) Del(fd int) error {
	return rawsys.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

// ctl is epoll_ctl with token as the event's 64 bits of user data, which x/sys/unix spells as
// two 32-bit fields on every Linux architecture.
func (l *Loop) ctl(op, fd int, events uint32, token uint64) error {
	return rawsys.EpollCtl(l.epfd, op, fd, &unix.EpollEvent{Events: events, Fd: int32(uint32(token)), Pad: int32(uint32(token >> 32))})
}

func tokenOf(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

func (l *Loop) watchListener() error {
	return l.ctl(unix.EPOLL_CTL_ADD, l.lfd, unix.EPOLLIN|unix.EPOLLEXCLUSIVE, listenerToken)
}

// Poke wakes the loop: its Handler.Woken runs soon. Any goroutine may call it, also after
// Close (it does nothing then).
func (l *Loop) Poke() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake >= 0 {
		one := [8]byte{1}
		_, _ = rawsys.Write(l.wake, one[:])
	}
}

// StopAccepting closes the loop's listener copy: the loop accepts no more (the other loops'
// copies, and the socket itself, stay open).
func (l *Loop) StopAccepting() {
	if l.lfd >= 0 {
		rawsys.CloseListener(l.epfd, l.lfd)
		l.lfd = -1
	}
}

// Close stops accepting and closes the epoll set and the wake-up; the consumer closes its own
// descriptors. Closing twice is harmless.
func (l *Loop) Close() {
	l.StopAccepting()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fd := range []int{l.wake, l.epfd} {
		if fd >= 0 {
			rawsys.Close(fd)
		}
	}
	l.wake, l.epfd = -1, -1
}

// Run is the loop's cycle until ctx ends (Poke makes it see that at once); the loop stays open
// (Close closes it). Each round waits for events, passes through the scheduler when YieldEvery
// has passed since the last time, hands the events to h, and sweeps when Options.Sweep has
// passed.
func (l *Loop) Run(ctx context.Context, h Handler) {
	events := make([]unix.EpollEvent, 256)
	lastSweep := time.Now()
	lastYield := lastSweep
	wait := int(l.opts.Sweep / time.Millisecond)
	for ctx.Err() == nil {
		// Look first without blocking and without telling the scheduler (a busy loop nearly
		// always finds events); only an empty look blocks, as a system call the scheduler
		// knows about, so its P serves other goroutines meanwhile.
		n, err := rawsys.EpollPoll(l.epfd, events)
		if n == 0 && err == nil {
			n, err = unix.EpollWait(l.epfd, events, wait)
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.opts.Log.Error(l.opts.LogPrefix+"epoll_wait failed", l.opts.ErrKey, err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.now = time.Now()
		if l.now.Sub(lastYield) >= YieldEvery {
			lastYield = l.now
			runtime.Gosched()
		}
		for i := range n {
			switch tok := tokenOf(&events[i]); tok {
			case wakeToken:
				var b [8]byte
				_, _ = rawsys.Read(l.wake, b[:])
				h.Woken()
			case listenerToken:
				l.accept(&h)
			default:
				h.Event(tok, events[i].Events)
			}
		}
		if h.Settle != nil {
			h.Settle()
		}
		if l.now.Sub(lastSweep) >= l.opts.Sweep {
			lastSweep = l.now
			l.sweep(&h)
		}
	}
}

// sweep resumes accepts paused for lack of descriptors, then runs the Handler's.
func (l *Loop) sweep(h *Handler) {
	if !l.paused.IsZero() && l.now.After(l.paused) && l.lfd >= 0 {
		l.paused = time.Time{}
		if err := l.watchListener(); err == nil {
			l.accept(h)
		}
	}
	h.Sweep()
	if h.Settle != nil {
		h.Settle()
	}
}

// accept takes up to AcceptBatch connections waiting on the listener and gives each to h.
func (l *Loop) accept(h *Handler) {
	if h.Accepted != nil {
		defer h.Accepted()
	}
	if l.lfd < 0 || h.MayAccept != nil && !h.MayAccept() {
		return
	}
	for range l.opts.AcceptBatch {
		fd, err := rawsys.Accept(l.lfd, &l.rsa)
		switch {
		case err == nil:
		case errors.Is(err, unix.EAGAIN):
			return
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
			continue
		case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.ENOMEM):
			l.opts.Log.Warn(l.opts.LogPrefix+"accept failed, pausing accepts", l.opts.ErrKey, err, "for", acceptPause.String())
			_ = rawsys.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, l.lfd, nil)
			l.paused = l.now.Add(acceptPause)
			return
		default:
			l.opts.Log.Error(l.opts.LogPrefix+"accept failed", l.opts.ErrKey, err)
			return
		}
		h.Accept(fd, &l.rsa)
	}
}
