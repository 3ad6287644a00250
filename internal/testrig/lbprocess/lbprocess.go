// Package lbprocess is the tests' one rig for a running in-house load balancer: the real
// `zero502 lb` binary as a child process for the length of one test, started on a config file
// and awaited until its admin API answers, its log kept in a file and shown when the test fails.
package lbprocess

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// ready bounds the wait for the admin API of a starting LB (a loaded CI machine is slow to start
// a race-built binary).
const ready = 30 * time.Second

// Start runs `bin lb --config config extra…` with its output in the file logPath until the test
// ends (then it is killed; when the test failed, the tail of its log is logged), and waits until
// its admin API at admin (host:port) answers /admin/health with 200.
func Start(t testing.TB, bin, config, admin, logPath string, extra ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("lbprocess: LB log: %v", err)
	}
	cmd := exec.Command(bin, append([]string{"lb", "--config", config}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("lbprocess: start %s lb: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	testmain.Track(t, func() { // at the test's end, or before a -timeout ends the test binary
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
		if t.Failed() {
			t.Logf("lb log (tail):\n%s", Tail(logPath, 3000))
		}
	})
	poll.UntilNil(t, ready, "lbprocess: the LB's admin API "+admin+" does not answer /admin/health", func() error {
		select {
		case <-exited:
			t.Fatalf("lbprocess: zero502 lb exited at start (%s); its log:\n%s", cmd.ProcessState, Tail(logPath, 3000))
		default:
		}
		resp, err := http.Get("http://" + admin + "/admin/health")
		if err != nil {
			return fmt.Errorf("%w\n%s", err, Tail(logPath, 3000))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("admin health %s\n%s", resp.Status, Tail(logPath, 3000))
		}
		return nil
	})
}

// Tail is the last n bytes of the file at path ("" when it cannot be read).
func Tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}
