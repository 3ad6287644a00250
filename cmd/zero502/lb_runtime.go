package main

import (
	"runtime"
	"runtime/debug"

	"github.com/zero502/zero502/infra/lb"
)

// The process settings of the lb command: the library (infra/lb) changes nothing about the
// process it runs in; this command runs one LB and decides for its own.

// reserveSpareP fixes the event loops at the current GOMAXPROCS and raises GOMAXPROCS by one.
// While every loop waits in epoll_wait the runtime then has an idle P for other goroutines
// (health checks, the admin API) and sees no reason to take the loops' Ps away during their
// waits; without it the scheduler's monitor retakes a waiting loop's P and wakes itself up to do
// so thousands of times a second, measured the largest avoidable kernel cost of the loops
// (bench/lb.sh: about 8% of req/s). It does nothing without event loops (not Linux) or when
// --loops is set.
func reserveSpareP(s *lb.Settings) {
	if !lb.EventLoopsAvailable || s.Loops > 0 {
		return
	}
	s.Loops = runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(s.Loops + 1)
}

// trimMemory is the LB's lb.WithMemoryTrim: a few collections (a stack shrinks by half at most
// per collection, and old stacks are freed in a later one), then the freed memory back to the
// OS. A few milliseconds, at most once a second, against megabytes of idle connections.
func trimMemory() {
	for i := 0; i < 4; i++ {
		runtime.GC()
	}
	debug.FreeOSMemory()
}
