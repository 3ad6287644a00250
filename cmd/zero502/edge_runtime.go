package main

import (
	"runtime"

	"github.com/zero502/zero502/infra/edge"
)

// reserveEdgeSpareP is reserveSpareP (lb_runtime.go) for the edge forwarder, whose event loops
// wait in epoll_wait the same way: it fixes the loops at the current GOMAXPROCS and raises
// GOMAXPROCS by one, so the runtime's monitor sees an idle P and leaves a waiting loop's P alone
// (without it, bench/edge.sh with a new connection per request measured the monitor's wake-ups
// and the P hand-offs among the largest costs). It does nothing without event loops or when
// Loops is set.
func reserveEdgeSpareP(f *edge.Forwarder) {
	if !edge.EventLoopsAvailable || f.Loops > 0 {
		return
	}
	f.Loops = runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(f.Loops + 1)
}
