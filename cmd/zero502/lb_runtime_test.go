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
}
