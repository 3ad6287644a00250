//go:build linux

package evloop

import (
	"bufio"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/internal/rawsys"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// listener is a TCP listener on 127.0.0.1 and its descriptor.
func listener(t *testing.T) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	lfd := -1
	if err := raw.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
		t.Fatal(err)
	}
	return ln, lfd
}

func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// running runs l with h until the returned stop is called; stop waits for Run to return.
func running(l *Loop, h Handler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, h)
	}()
	return func() {
		cancel()
		l.Poke()
		<-done
	}
}

// closing is a Handler that closes what it accepts and counts it.
func closing(accepted *atomic.Int64) Handler {
	return Handler{
		Accept: func(fd int, _ *unix.RawSockaddrAny) { rawsys.Close(fd); accepted.Add(1) },
		Event:  func(uint64, uint32) {},
		Woken:  func() {},
		Sweep:  func() {},
	}
}

// Each loop of a group holds its own duplicate of the listener, in its own epoll set with
// EPOLLEXCLUSIVE, and accepts from it alone.
func TestEachLoopAcceptsFromItsOwnListenerCopy(t *testing.T) {
	ln, lfd := listener(t)
	g, err := NewGroup(3, lfd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var st unix.Stat_t
	if err := unix.Fstat(lfd, &st); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{lfd: true}
	for i, l := range g.Loops {
		if seen[l.lfd] {
			t.Fatalf("loop %d's listener copy %d is not a descriptor of its own", i, l.lfd)
		}
		seen[l.lfd] = true
		var lst unix.Stat_t
		if err := unix.Fstat(l.lfd, &lst); err != nil || lst.Ino != st.Ino {
			t.Fatalf("loop %d's listener copy is not the listening socket (%v)", i, err)
		}
		if ev, ok := watched(t, l.epfd, l.lfd); !ok || ev&unix.EPOLLEXCLUSIVE == 0 || ev&unix.EPOLLIN == 0 {
			t.Fatalf("loop %d watches its listener copy with events %#x (watched %v), want EPOLLIN|EPOLLEXCLUSIVE", i, ev, ok)
		}
	}
	if len(g.EpollFDs()) != 3 {
		t.Fatalf("epoll sets %v, want 3", g.EpollFDs())
	}
	// one loop at a time runs: the connection is its
	for i, l := range g.Loops {
		var accepted atomic.Int64
		stop := running(l, closing(&accepted))
		dial(t, ln)
		poll.Until(t, 5*time.Second, "loop "+strconv.Itoa(i)+" accepts", func() bool { return accepted.Load() == 1 })
		stop()
	}
}

// watched reads /proc/self/fdinfo of the epoll set epfd: the events fd is registered for.
func watched(t *testing.T, epfd, fd int) (uint32, bool) {
	t.Helper()
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		t.Skip("no /proc")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 4 && fs[0] == "tfd:" && fs[1] == strconv.Itoa(fd) && fs[2] == "events:" {
			ev, err := strconv.ParseUint(fs[3], 16, 32)
			return uint32(ev), err == nil
		}
	}
	return 0, false
}

// Every loop of a running group accepts; each connection is accepted once, with its peer's
// address and the listener's TCP_NODELAY, and the Accepted hook follows each batch.
func TestAGroupAcceptsEveryConnectionOnce(t *testing.T) {
	ln, lfd := listener(t)
	g, err := NewGroup(3, lfd, Options{AcceptBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !g.NoDelayInherited {
		t.Fatal("NoDelayInherited is false: TCP_NODELAY was not set on the listener")
	}
	var mu sync.Mutex
	peers := map[string]int{}
	withNagle := 0 // accepted connections without TCP_NODELAY
	var batches atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	g.Go(func(i int) {
		g.Loops[i].Run(ctx, Handler{
			Accept: func(fd int, peer *unix.RawSockaddrAny) {
				nodelay, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
				mu.Lock()
				peers[rawsys.AddrPort(peer).String()]++
				if err != nil || nodelay == 0 {
					withNagle++
				}
				mu.Unlock()
				rawsys.Close(fd)
			},
			Accepted: func() { batches.Add(1) },
			Event:    func(uint64, uint32) {},
			Woken:    func() {},
			Sweep:    func() {},
		})
		g.Loops[i].Close()
	})
	const n = 40
	var locals []string
	for range n {
		locals = append(locals, dial(t, ln).LocalAddr().String())
	}
	poll.Until(t, 5*time.Second, "every connection accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(peers) == n
	})
	cancel()
	g.PokeAll()
	g.Wait()
	for _, a := range locals {
		if peers[a] != 1 {
			t.Errorf("connection from %s accepted %d times, want once", a, peers[a])
		}
	}
	if withNagle != 0 {
		t.Errorf("%d of %d accepted connections without TCP_NODELAY; want every one to inherit the listener's", withNagle, n)
	}
	if batches.Load() < n/4 {
		t.Errorf("%d accept batches for %d connections at 4 a batch", batches.Load(), n)
	}
	for i, l := range g.Loops {
		if l.EpollFD() != -1 || l.Accepting() {
			t.Errorf("loop %d still open after Close", i)
		}
	}
}

// MayAccept false leaves connections in the listen queue, and a loop that stopped accepting
// takes no more; the listening socket itself stays open.
func TestConnectionsALoopDoesNotAcceptStayQueued(t *testing.T) {
	ln, lfd := listener(t)
	l, err := New(lfd, Options{Sweep: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted, asked atomic.Int64
	h := closing(&accepted)
	h.MayAccept = func() bool { asked.Add(1); return false }
	stop := running(l, h)
	dial(t, ln)
	poll.Until(t, 5*time.Second, "MayAccept asked", func() bool { return asked.Load() > 0 })
	stop()
	if accepted.Load() != 0 {
		t.Fatal("accepted although MayAccept said no")
	}
	l.StopAccepting()
	if l.Accepting() {
		t.Fatal("Accepting after StopAccepting")
	}
	stop = running(l, closing(&accepted))
	dial(t, ln)
	time.Sleep(20 * time.Millisecond)
	stop()
	if accepted.Load() != 0 {
		t.Fatal("a loop that stopped accepting accepted")
	}
	for range 2 { // both connections wait for the socket's own accept
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			t.Fatalf("the listening socket after the loop stopped accepting: %v", err)
		}
		c.Close()
	}
}

// Poke wakes a loop blocked in epoll_wait; pokes before it runs make one Woken.
func TestPokeWakesTheLoop(t *testing.T) {
	l, err := New(-1, Options{Sweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	woken := make(chan struct{}, 10)
	h := Handler{Event: func(uint64, uint32) {}, Woken: func() { woken <- struct{}{} }, Sweep: func() {}}
	l.Poke()
	l.Poke()
	l.Poke()
	stop := running(l, h)
	defer stop()
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("three pokes before Run: not woken")
	}
	time.Sleep(20 * time.Millisecond)
	if len(woken) != 0 {
		t.Fatalf("three pokes before Run woke the loop %d times more", len(woken))
	}
	time.Sleep(20 * time.Millisecond) // the loop waits in epoll_wait now (for an hour)
	go l.Poke()
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("a poke did not wake the waiting loop")
	}
}

// Sweep runs every Options.Sweep, and Settle after it and after each round's events.
func TestSweepAndSettle(t *testing.T) {
	l, err := New(-1, Options{Sweep: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var sweeps, settles atomic.Int64
	var last atomic.Int64 // 1: the last hook was Sweep
	stop := running(l, Handler{Event: func(uint64, uint32) {}, Woken: func() {},
		Sweep:  func() { sweeps.Add(1); last.Store(1) },
		Settle: func() { settles.Add(1); last.Store(0) }})
	poll.Until(t, 5*time.Second, "five sweeps", func() bool { return sweeps.Load() >= 5 })
	stop()
	if settles.Load() < sweeps.Load() || last.Load() != 0 {
		t.Fatalf("%d sweeps, %d settles (last hook a sweep: %v): want a Settle after each Sweep", sweeps.Load(), settles.Load(), last.Load() == 1)
	}
	if l.Now().IsZero() || time.Since(l.Now()) > time.Second {
		t.Fatalf("Now %v: not the time of a recent round", l.Now())
	}
}

// A registered descriptor's events reach Event with its 64-bit token; Del stops them.
func TestEventsCarryTheirToken(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rawsys.Close(fds[0])
	defer rawsys.Close(fds[1])
	l, err := New(-1, Options{Sweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const token = 1<<40 | 7
	type event struct {
		token  uint64
		events uint32
	}
	got := make(chan event, 16)
	if err := l.Add(fds[0], EdgeTriggered, token); err != nil {
		t.Fatal(err)
	}
	stop := running(l, Handler{Event: func(tok uint64, ev uint32) { got <- event{tok, ev} }, Woken: func() {}, Sweep: func() {}})
	defer stop()
	want := func(what string, events uint32) {
		t.Helper()
		select {
		case e := <-got:
			if e.token != token || e.events&events == 0 {
				t.Fatalf("%s: event %#x for token %#x, want %#x for %#x", what, e.events, e.token, events, uint64(token))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no event", what)
		}
	}
	want("a new socket", unix.EPOLLOUT) // writable at once
	if _, err := rawsys.Write(fds[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	want("bytes written", unix.EPOLLIN)
	if err := l.Del(fds[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := rawsys.Write(fds[1], []byte("y")); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		t.Fatalf("event %#x after Del", e.events)
	case <-time.After(30 * time.Millisecond):
	}
}

// LeastLoaded is the loop holding the fewest connections, the first of equals.
func TestLeastLoaded(t *testing.T) {
	g, err := NewGroup(3, -1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if i := g.LeastLoaded(); i != 0 {
		t.Fatalf("LeastLoaded of idle loops: %d, want 0", i)
	}
	g.Loops[0].Hold(2)
	g.Loops[1].Hold(1)
	g.Loops[2].Hold(1)
	if i := g.LeastLoaded(); i != 1 {
		t.Fatalf("LeastLoaded of 2, 1, 1: %d, want 1", i)
	}
	g.Loops[1].Hold(1)
	if i := g.LeastLoaded(); i != 2 || g.Loops[1].Held() != 2 {
		t.Fatalf("LeastLoaded of 2, 2, 1: %d (held %d), want 2", i, g.Loops[1].Held())
	}
}

// Readiness records each kind of event until the consumer clears it.
func TestReadinessNote(t *testing.T) {
	var r Readiness
	r.Note(unix.EPOLLOUT)
	if !r.CanWrite || r.CanRead || r.Hup {
		t.Fatalf("EPOLLOUT: %+v", r)
	}
	r.Note(unix.EPOLLIN)
	if !r.CanRead || !r.CanWrite || r.Hup {
		t.Fatalf("EPOLLIN after EPOLLOUT: %+v", r)
	}
	r = Readiness{}
	r.Note(unix.EPOLLRDHUP)
	if !r.CanRead || !r.Hup || r.CanWrite {
		t.Fatalf("EPOLLRDHUP: %+v, want readable to the EOF", r)
	}
	r = Readiness{}
	r.Note(unix.EPOLLERR)
	if !r.CanRead || !r.CanWrite || !r.Hup {
		t.Fatalf("EPOLLERR: %+v, want every flag (the next call reports the error)", r)
	}
}

// Run ends with its context (a poke makes it see that at once), and the loop stays open until
// Close; a closed loop refuses Add and ignores Poke.
func TestShutdown(t *testing.T) {
	_, lfd := listener(t)
	l, err := New(lfd, Options{Sweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, Handler{Accept: func(fd int, _ *unix.RawSockaddrAny) { rawsys.Close(fd) },
			Event: func(uint64, uint32) {}, Woken: func() {}, Sweep: func() {}})
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	l.Poke()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended and a poke")
	}
	if l.EpollFD() < 0 || !l.Accepting() {
		t.Fatal("Run closed the loop")
	}
	l.Close()
	l.Close()
	l.Poke()
	if err := l.Add(0, EdgeTriggered, 0); err != ErrClosed {
		t.Fatalf("Add on a closed loop: %v, want ErrClosed", err)
	}
	if l.EpollFD() != -1 || l.Accepting() {
		t.Fatal("descriptors left after Close")
	}
}
