package main

import (
	"runtime"
	"testing"

	"github.com/zero502/zero502/infra/lb"
)

func TestReserveSpareP(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)

	if !lb.EventLoopsAvailable {
		t.Skip("no event loops on this system: nothing to reserve")
	}
	s := lb.LabSettings("127.0.0.1:0", []string{"127.0.0.1:9001"})
	reserveSpareP(lb.EventLoopsAvailable, &s.Loops, 0)
	if s.Loops != procs || runtime.GOMAXPROCS(0) != procs+1 {
		t.Fatalf("loops %d, GOMAXPROCS %d; want %d loops and one P more", s.Loops, runtime.GOMAXPROCS(0), procs)
	}
	reserveSpareP(lb.EventLoopsAvailable, &s.Loops, 0) // Loops is set now: nothing changes again
	if runtime.GOMAXPROCS(0) != procs+1 {
		t.Fatalf("a second call raised GOMAXPROCS to %d", runtime.GOMAXPROCS(0))
	}

	for _, c := range []struct {
		name                      string
		procs, loops, free        int
		wantLoops, wantGOMAXPROCS int
	}{
		// not set by hand: one loop per P less the CPUs left free, at least one
		{name: "the LB on 2 CPUs", procs: 2, free: lbFreeCPUs, wantLoops: 1, wantGOMAXPROCS: 2},
		{name: "the LB on 8 CPUs", procs: 8, free: lbFreeCPUs, wantLoops: 7, wantGOMAXPROCS: 8},
		{name: "the LB on 1 CPU", procs: 1, free: lbFreeCPUs, wantLoops: 1, wantGOMAXPROCS: 2},
		{name: "the edge on 2 CPUs", procs: 2, free: edgeFreeCPUs, wantLoops: 2, wantGOMAXPROCS: 3},
		// --loops set: the loops get their spare P too, and GOMAXPROCS never goes down
		{name: "--loops 2 on 2 CPUs", procs: 2, loops: 2, free: lbFreeCPUs, wantLoops: 2, wantGOMAXPROCS: 3},
		{name: "--loops 1 on 2 CPUs", procs: 2, loops: 1, free: lbFreeCPUs, wantLoops: 1, wantGOMAXPROCS: 2},
		{name: "--loops 1 on 4 CPUs", procs: 4, loops: 1, free: edgeFreeCPUs, wantLoops: 1, wantGOMAXPROCS: 4},
		{name: "--loops 6 on 1 CPU", procs: 1, loops: 6, free: lbFreeCPUs, wantLoops: 6, wantGOMAXPROCS: 7},
	} {
		runtime.GOMAXPROCS(c.procs)
		loops := c.loops
		reserveSpareP(lb.EventLoopsAvailable, &loops, c.free)
		if got := runtime.GOMAXPROCS(0); loops != c.wantLoops || got != c.wantGOMAXPROCS {
			t.Errorf("%s: loops %d, GOMAXPROCS %d; want loops %d, GOMAXPROCS %d",
				c.name, loops, got, c.wantLoops, c.wantGOMAXPROCS)
		}
	}
}
