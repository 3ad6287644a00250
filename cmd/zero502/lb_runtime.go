package main

import (
	"runtime"
	"runtime/debug"
)

// The process settings of the lb and edge commands: the libraries (infra/lb, infra/edge) change
// nothing about the process they run in; each command runs one server and decides for its own.

// reserveSpareP gives a server's event loops (*loops: lb.Settings.Loops, edge.Forwarder.Loops)
// a spare P: GOMAXPROCS becomes at least one more than the loops. While every loop waits in
// epoll_wait the runtime then has an idle P for other goroutines (health checks, the admin API)
// and sees no reason to take the loops' Ps away during their waits; without it the scheduler's
// monitor retakes a waiting loop's P and wakes itself up to do so thousands of times a second,
// measured the largest avoidable kernel cost of the loops (bench/lb.sh: about 8% of req/s, also
// with --loops set to the CPUs; bench/edge.sh with a new connection per request: among the
// largest costs). It does nothing without event loops (available false: not Linux), and never
// lowers GOMAXPROCS.
//
// *loops 0 (not set by hand) is fixed here at one per P (the current GOMAXPROCS) less free, and
// at least one. The LB leaves one CPU free (lbFreeCPUs), the edge none.
func reserveSpareP(available bool, loops *int, free int) {
	if !available {
		return
	}
	if *loops == 0 {
		*loops = max(1, runtime.GOMAXPROCS(0)-free)
	}
	if runtime.GOMAXPROCS(0) < *loops+1 {
		runtime.GOMAXPROCS(*loops + 1)
	}
}

// lbFreeCPUs is how many CPUs the LB's loops leave by default: one, so that with the spare P
// the process has no more Ps than CPUs. The LB's loops batch each round's receives and sends
// (infra/lb's loop_io_linux.go), so fewer, fuller rounds serve a request for less. On two CPUs
// that the LB shares with its clients and backends (as kamal-proxy shares a host with its apps),
// one loop served 1.12x the req/s of two at 0.71x the CPU per request and 0.75x the p99
// (bench/lb.sh, side by side in the same rounds), and the goroutine path (TLS, slow bodies,
// health checks, the collector) keeps a CPU of its own. A machine that runs nothing but the LB
// may give --loops all its CPUs. The edge's loops batch nothing: one loop fewer served 0.87x
// there, so the edge leaves none (edgeFreeCPUs).
const (
	lbFreeCPUs   = 1
	edgeFreeCPUs = 0
)

// trimMemory is the LB's lb.WithMemoryTrim: a few collections (a stack shrinks by half at most
// per collection, and old stacks are freed in a later one), then the freed memory back to the
// OS. A few milliseconds, at most once a second, against megabytes of idle connections.
func trimMemory() {
	for i := 0; i < 4; i++ {
		runtime.GC()
	}
	debug.FreeOSMemory()
}
