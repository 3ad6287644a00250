package main

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/lbprocess"
	"github.com/zero502/zero502/internal/testrig/poll"
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

// `zero502 lb` itself, without --loops, runs one loop per CPU less one (at least one), and
// --loops given by hand wins: the number its start-up log reports, for a process whose runtime
// sees 3 CPUs or 1 (GOMAXPROCS in its environment).
func TestLBCommandLeavesOneCPUToTheRestOfTheProcess(t *testing.T) {
	if !lb.EventLoopsAvailable {
		t.Skip("no event loops on this system")
	}
	bin := buildZero502(t)
	for _, c := range []struct {
		gomaxprocs string
		extra      []string
		want       int
	}{
		{gomaxprocs: "3", want: 2},
		{gomaxprocs: "1", want: 1},
		{gomaxprocs: "3", extra: []string{"--loops", "3"}, want: 3},
	} {
		t.Run(strings.TrimSpace("GOMAXPROCS="+c.gomaxprocs+" "+strings.Join(c.extra, " ")), func(t *testing.T) {
			t.Setenv("GOMAXPROCS", c.gomaxprocs) // (the LB's environment: this process's runtime is set already)
			path, admin := localConfig(t)
			logPath := filepath.Join(t.TempDir(), "lb.log")
			lbprocess.Start(t, bin, path, admin, logPath, c.extra...)
			loops := regexp.MustCompile(`"?event_loops"?[:=](\d+)`)
			var got string
			poll.Until(t, 10*time.Second, "the LB's start-up log line with event_loops", func() bool {
				m := loops.FindStringSubmatch(lbprocess.Tail(logPath, 1<<20))
				if m != nil {
					got = m[1]
				}
				return m != nil
			})
			if got != strconv.Itoa(c.want) {
				t.Fatalf("event_loops %s, want %d; log:\n%s", got, c.want, lbprocess.Tail(logPath, 3000))
			}
		})
	}
}
