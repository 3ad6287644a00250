package main

import (
	"runtime"
	"runtime/debug"
)

// The process settings of the lb and edge commands: the libraries (infra/lb, infra/edge) change
// nothing about the process they run in; each command runs one server and decides for its own.

// reserveSpareP gives a server's event loops (*loops: lb.Settings.Loops, edge.Forwarder.Loops;
// 0, one per P, is fixed here at the current GOMAXPROCS) a spare P: GOMAXPROCS becomes at least
// one more than the loops. While every loop waits in epoll_wait the runtime then has an idle P for
// other goroutines (health checks, the admin API) and sees no reason to take the loops' Ps away
// during their waits; without it the scheduler's monitor retakes a waiting loop's P and wakes
// itself up to do so thousands of times a second, measured the largest avoidable kernel cost of
// the loops (bench/lb.sh: about 8% of req/s, also with --loops set to the CPUs; bench/edge.sh
// with a new connection per request: among the largest costs). It does nothing without event
// loops (available false: not Linux), and never lowers GOMAXPROCS.
func reserveSpareP(available bool, loops *int) {
	if !available {
		return
	}
	if *loops == 0 {
		*loops = runtime.GOMAXPROCS(0)
	}
	if runtime.GOMAXPROCS(0) < *loops+1 {
		runtime.GOMAXPROCS(*loops + 1)
	}
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
