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
	reserveSpareP(lb.EventLoopsAvailable, &s.Loops)
	if s.Loops != procs || runtime.GOMAXPROCS(0) != procs+1 {
		t.Fatalf("loops %d, GOMAXPROCS %d; want %d loops and one P more", s.Loops, runtime.GOMAXPROCS(0), procs)
	}
	reserveSpareP(lb.EventLoopsAvailable, &s.Loops) // Loops is set now: nothing changes again
	if runtime.GOMAXPROCS(0) != procs+1 {
		t.Fatalf("a second call raised GOMAXPROCS to %d", runtime.GOMAXPROCS(0))
	}

	// --loops set: the loops get their spare P too, and GOMAXPROCS never goes down.
	for _, c := range []struct{ procs, loops, want int }{
		{procs: 2, loops: 2, want: 3},
		{procs: 2, loops: 1, want: 2},
		{procs: 4, loops: 1, want: 4},
		{procs: 1, loops: 6, want: 7},
	} {
		runtime.GOMAXPROCS(c.procs)
		loops := c.loops
		reserveSpareP(lb.EventLoopsAvailable, &loops)
		if got := runtime.GOMAXPROCS(0); loops != c.loops || got != c.want {
			t.Errorf("--loops %d at GOMAXPROCS %d: loops %d, GOMAXPROCS %d; want loops %d, GOMAXPROCS %d",
				c.loops, c.procs, loops, got, c.loops, c.want)
		}
	}
}
