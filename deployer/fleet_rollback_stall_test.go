package deployer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// A fleet rollback's step over ssh (a failed verdict sends the canary host back to v1) has the
// progress clock a deploy's step has: the step to v1 is reached and then says nothing, nor ends
// when told (the ssh wrapper sleeps, as a zero502 hung on the host would), so after
// rollout.progress_deadline the deployer says it stalled and tells it to stop, cuts it off after
// the rollback's budget, and the deploy ends, saying why, instead of holding the fleet lock for
// as long as the host's sshd keeps the session.
func TestAFleetRollbacksStepOverSSHStallsAsADeploysStepDoes(t *testing.T) {
	t.Parallel()
	const deadline = 11 * time.Second // > 1s + 4s + 5s + 0 + 2 × 200ms (I16)
	f, v2 := judgedOverSSHOnV1(t, func(cfg *config.Config) {
		cfg.Rollout.HealthyDeadline = 5 * time.Second
		cfg.Rollout.ProgressDeadline = deadline
	})
	ctx := context.Background()
	reached := filepath.Join(f.dir, "step-back-reached")
	wrapper := f.sshWrapper(`case "$*" in *"--version v1 "*) echo $$ > ` + reached + `; exec sleep 600;; esac`)
	t.Cleanup(func() {
		if b, err := os.ReadFile(reached); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	var ev eventLog
	d := f.deployer(f.load(v2), &ev, Options{RemoteBinary: bin, SSH: wrapper, LockTimeout: time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := d.Deploy(ctx, "v2")
		done <- err
	}()
	poll.Until(t, 60*time.Second, "the fleet rollback's step to v1 began", func() bool {
		_, err := os.Stat(reached)
		return err == nil
	})
	m.stop(t)
	began := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStalled) || !strings.Contains(ev.String(), StepStalled) || !strings.Contains(err.Error(), "rollout.progress_deadline 11s") {
			t.Fatalf("the deploy ended %s after the silent step back began: %v; want it stopped for stalling, saying "+
				"rollout.progress_deadline 11s, with a %s event\n%s", time.Since(began).Round(time.Millisecond), err, StepStalled, &ev)
		}
	case <-time.After(deadline + time.Second + d.rollbackBudget(1) + 20*time.Second):
		t.Fatalf("the fleet rollback's silent step over ssh is still waited for %s after it began (rollout.progress_deadline %s, "+
			"--lock-timeout 1s): it holds the deploy and the fleet lock\n%s", time.Since(began).Round(time.Second), deadline, &ev)
	}
}
