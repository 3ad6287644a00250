package watchdog_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/watchdog"
)

// environ reads the environment of a process-runtime instance from /proc.
func environ(t *testing.T, inst runtime.Instance) map[string]string {
	t.Helper()
	var pid int
	if _, err := fmt.Sscanf(inst.ID, "pid:%d", &pid); err != nil {
		t.Fatalf("instance id %q: %v", inst.ID, err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(data), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// A heal gives the service the environment a deploy gave it, whatever the watchdog's own
// environment holds (under systemd it differs from a deployer's shell).
func TestAHealedServiceGetsTheDeployedEnvironmentNothingOfTheWatchdogs(t *testing.T) {
	f := processFixture(t) // deployed with this test process's environment
	deployed := f.running("web")
	if len(deployed) != 1 {
		t.Fatalf("web runs %+v after the deploy", deployed)
	}
	before := environ(t, deployed[0])

	t.Setenv("AWS_SECRET_ACCESS_KEY", "watchdog-secret")
	t.Setenv("ZERO502_SSH_OPTS", "-i /root/.ssh/deploy_key")
	t.Setenv("INVOCATION_ID", "systemd-unit")
	f.kill("web")
	var rep watchdog.Report
	for i := 0; i < f.cfg.Watchdog.HealAfter; i++ {
		rep = f.tick()
	}
	if v := verdict(t, rep, "web"); !v.Healed {
		t.Fatalf("web after %d failing ticks: %+v, want healed", f.cfg.Watchdog.HealAfter, v)
	}
	healed := f.running("web")
	if len(healed) != 1 {
		t.Fatalf("web runs %+v after the heal", healed)
	}
	after := environ(t, healed[0])
	for _, leak := range []string{"AWS_SECRET_ACCESS_KEY", "ZERO502_SSH_OPTS", "INVOCATION_ID"} {
		if _, ok := after[leak]; ok {
			t.Errorf("the watchdog's %s reached the healed service", leak)
		}
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("deployed with\n%v\nhealed with\n%v\nwant the same environment", before, after)
	}
	for k, v := range runtime.BaseEnv() {
		if after[k] != v {
			t.Errorf("healed service %s=%q, want the base %q", k, after[k], v)
		}
	}
}

// A corrupt instance record of one service is reported on that service and fails the tick; the
// host's other services are still healed. The record says nothing of whether the service runs:
// it is not checked, and not counted towards a heal.
func TestACorruptRecordFailsItsOwnCheckNotTheOthers(t *testing.T) {
	f := processFixture(t)
	f.kill("web")
	f.kill("worker")
	record := filepath.Join(f.dir, "instances", "worker.json")
	if err := os.WriteFile(record, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep watchdog.Report
	for i := 0; i < f.cfg.Watchdog.HealAfter; i++ {
		rep = f.tick()
	}
	if v := verdict(t, rep, "web"); !v.Healed {
		t.Fatalf("web: %+v, want healed despite worker's corrupt record", v)
	}
	if got := f.running("web"); len(got) != 1 || got[0].Version != "v1" {
		t.Fatalf("web runs %+v after the heal, want one v1", got)
	}
	w := verdict(t, rep, "worker")
	if w.Healed || w.Streak != 0 || !strings.Contains(w.CheckError, record) {
		t.Fatalf("worker: %+v, want not checked, not counted, naming %s", w, record)
	}
	err := rep.Err()
	if !errors.Is(err, watchdog.ErrNotChecked) || errors.Is(err, watchdog.ErrHealFailed) ||
		!strings.Contains(err.Error(), "worker") || strings.Contains(err.Error(), "web:") {
		t.Fatalf("Report.Err = %v, want ErrNotChecked naming worker only", err)
	}
	if !strings.Contains(rep.String(), "worker NOT CHECKED") {
		t.Errorf("report line %q should say worker was not checked", rep.String())
	}
}

func TestAHealthyTickIsNoError(t *testing.T) {
	f := processFixture(t)
	if err := f.tick().Err(); err != nil {
		t.Fatalf("Report.Err of a healthy tick = %v", err)
	}
}

func TestTheStateFilesAreReadableByOtherUsers(t *testing.T) {
	f := processFixture(t)
	f.tick()
	if fi, err := os.Stat(f.cfg.HostLockPath(f.host)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the host lock: %v, %v; want 0600 (a user who could read it could hold it)", fi.Mode().Perm(), err)
	}
	for _, p := range []string{metricsPath(f), statePath(f)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode %v, want 0644 (node_exporter's textfile collector runs as another user)", p, fi.Mode().Perm())
		}
	}
}
