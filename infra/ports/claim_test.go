package ports

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// Ports picked at the same time in one process (parallel tests) never overlap, although each
// is freed again as soon as it is found.
func TestConcurrentPicksNeverHandOutAPortTwice(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 25 {
				ps, err := Free(4)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, p := range ps {
					if prev, dup := seen[p]; dup {
						t.Errorf("port %d handed out to picker %d and again to %d", p, prev, g)
					}
					seen[p] = g
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// Another live process's claim is honoured; a dead process's claim is taken over.
func TestAnotherProcessesClaimIsHonouredWhileItLives(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("claims are this process's own where owners cannot be checked")
	}
	ps, err := Free(1)
	if err != nil {
		t.Fatal(err)
	}
	claims.Lock()
	dir := claimDir()
	claims.Unlock()
	if dir == "-" {
		t.Fatalf("no claim directory: want %s/zero502-ports-%d made 0700", os.TempDir(), os.Getuid())
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("claim directory %s: %v, mode %v; want 0700", dir, err, fi.Mode())
	}

	// The port after the one just claimed, claimed by init (pid 1, alive for as long as the
	// machine) as another process would: listenFrom must step past it.
	live := ps[0] + 1
	release(live) // (a parallel test of this process may hold it: this test plays another process)
	path := filepath.Join(dir, strconv.Itoa(live))
	if err := os.WriteFile(path, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	h, out := listenFrom(live, live+1, 1)
	closeAll(h)
	if len(out) != 0 {
		t.Fatalf("listenFrom handed out %v, claimed by pid 1", out)
	}

	// The same claim by a process that has exited is stale.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(gone.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	h, out = listenFrom(live, live+1, 1)
	closeAll(h)
	if len(out) != 1 || out[0] != live {
		t.Fatalf("listenFrom(%d) = %v: want the port whose claimant (pid %d) has exited", live, out, gone.Process.Pid)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("claim file after takeover: %q, %v; want this pid %d", data, err, os.Getpid())
	}
}

// Claimants racing for one port file, as processes on one machine do, never both win: not while
// the winner's file is being written (it appears whole), and not when they race to take over the
// same stale claim (a claimant that judged the old file stale does not remove the fresh one that
// replaced it). The goroutines stand in for processes: claimFile takes no in-process lock.
func TestRacingClaimantsOfOnePortFileNeverBothWin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("claims are this process's own where owners cannot be checked")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := []byte(strconv.Itoa(gone.Process.Pid))
	dir := t.TempDir()
	for _, stalePresent := range []bool{false, true} {
		doubles, nones := 0, 0
		for i := range 500 {
			path := filepath.Join(dir, strconv.FormatBool(stalePresent)+strconv.Itoa(i))
			if stalePresent {
				if err := os.WriteFile(path, deadPID, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var wins sync.WaitGroup
			var mu sync.Mutex
			won := 0
			start := make(chan struct{})
			for range 4 {
				wins.Go(func() {
					<-start
					if claimFile(path) {
						mu.Lock()
						won++
						mu.Unlock()
					}
				})
			}
			close(start)
			wins.Wait()
			switch {
			case won > 1:
				doubles++
			case won == 0:
				nones++
			}
		}
		if doubles > 0 || nones > 0 {
			t.Errorf("stale claim present %v: %d of 500 port files claimed by more than one claimant, %d by none", stalePresent, doubles, nones)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*.*-*")); len(left) > 0 {
			t.Errorf("temporary files left beside the claims: %v", left)
		}
	}
}

// A claimed port whose service is not listening right now (a stop-first deploy restarting it)
// is never bound by another pick, not even for the moment of its check: a pick holds what it
// bound until it found every port, and the service's bind in that moment failed with "address
// already in use", the very failure claims exist to prevent.
func TestAPickNeverBindsAClaimedPort(t *testing.T) {
	ps, err := Free(1)
	if err != nil {
		t.Fatal(err)
	}
	restarting := ps[0] // handed out, its service between stop and start
	h, _ := listenFrom(restarting, restarting+2, 2)
	ln, err := listen(restarting)
	closeAll(h)
	if err != nil {
		t.Fatalf("the service restarting on its claimed port %d cannot bind it while another pick runs: %v", restarting, err)
	}
	ln.Close()
}
