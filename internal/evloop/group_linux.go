//go:build linux

package evloop

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Group is the loops of one listening socket, each with its own copy of it, and their
// goroutines.
type Group struct {
	Loops []*Loop
	// NoDelayInherited: the listening socket has TCP_NODELAY, which Linux copies into every
	// connection it accepts, so a consumer need not set it on each (a setsockopt per
	// connection saved). NewGroup sets it on the listener it is given.
	NoDelayInherited bool
	wg               sync.WaitGroup
}

// NewGroup creates n loops (0: one per P) accepting from listenFD (-1: none accepts; see New),
// and sets TCP_NODELAY on listenFD (see NoDelayInherited). On an error none is left open.
func NewGroup(n, listenFD int, opts Options) (*Group, error) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	g := &Group{}
	if listenFD >= 0 {
		g.NoDelayInherited = unix.SetsockoptInt(listenFD, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) == nil
	}
	for range n {
		l, err := New(listenFD, opts)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.Loops = append(g.Loops, l)
	}
	return g, nil
}

// Go runs body(i) for each loop i on a goroutine of its own (body usually runs the loop's Run,
// then closes what the loop held); Wait waits for them all.
func (g *Group) Go(body func(i int)) {
	for i := range g.Loops {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			body(i)
		}()
	}
}

// Wait waits for the bodies Go started.
func (g *Group) Wait() { g.wg.Wait() }

// LeastLoaded is the index of the loop holding the fewest connections (see Loop.Hold): where
// a consumer hands a connection so that the loops share the work whichever of them the kernel
// woke for it.
func (g *Group) LeastLoaded() int {
	best := 0
	for i, l := range g.Loops[1:] {
		if l.Held() < g.Loops[best].Held() {
			best = i + 1
		}
	}
	return best
}

// PokeAll wakes every loop.
func (g *Group) PokeAll() {
	for _, l := range g.Loops {
		l.Poke()
	}
}

// Close closes every loop (see Loop.Close): for a Group whose loops never ran, or ran and
// returned.
func (g *Group) Close() {
	for _, l := range g.Loops {
		l.Close()
	}
}

// EpollFDs are the loops' epoll descriptors.
func (g *Group) EpollFDs() map[int]bool {
	own := make(map[int]bool, len(g.Loops))
	for _, l := range g.Loops {
		own[l.epfd] = true
	}
	return own
}
