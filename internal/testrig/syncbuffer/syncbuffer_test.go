package syncbuffer

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

func TestBufferKeepsEveryWriteOfConcurrentWritersWhole(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "writer %d line %d\n", w, i)
				_ = b.String() // a read while others write: the race detector's case
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		var w, i int
		if n, err := fmt.Sscanf(l, "writer %d line %d", &w, &i); n != 2 || err != nil {
			t.Fatalf("line %q is not one whole write", l)
		}
	}
}

func TestBufferCollectsAChildProcesssOutputWhileItRuns(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh here")
	}
	var out Buffer
	cmd := exec.Command(sh, "-c", "echo out; echo err >&2")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "out\n") || !strings.Contains(got, "err\n") {
		t.Fatalf("collected %q, want both lines", got)
	}
}
