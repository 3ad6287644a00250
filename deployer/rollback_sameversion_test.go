package deployer

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/report"
)

// A config change under the same version (here one more flag) that fails its host's step (here
// its post_traffic hook) is rolled back to the config the host ran: the instance the failed step
// started runs the same version on the same port, but not the restored spec, so it must not be
// kept as the rollback's "old" instance and reported rolled back.
func TestARollbackOfAChangedConfigUnderTheSameVersionRestartsTheOldConfig(t *testing.T) {
	t.Parallel()
	v := defaultValues()
	f, _ := onV1(t, 2, v)
	ctx := context.Background()
	script, _ := hookScript(t, f.dir)
	v.AppFlags = []string{"--delay", "0s"} // a flag that changes nothing the app does
	cfg := f.load(f.config("changed.yaml", v))
	withHooks(cfg, script, "post_traffic")
	var ev eventLog
	rep, err := f.deployer(f.load(f.write("changed.yaml", cfg)), &ev, Options{}).Deploy(ctx, "v1")
	if err == nil || !strings.Contains(err.Error(), "hooks.post_traffic") {
		t.Fatalf("deploy of a changed command failing its post_traffic hook: %v; want the hook named\nevents:\n%s", err, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Fatalf("host-a: %s, runs %q; want rolled back to v1\nevents:\n%s", a.Outcome, a.Running, &ev)
	}
	in := f.instances("host-a")["web"]
	cmdline, err := os.ReadFile("/proc/" + strings.TrimPrefix(in.ID, "pid:") + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cmdline), "--delay") {
		t.Errorf("host-a, reported rolled back, still runs the failed step's instance %s: %q\nevents:\n%s",
			in.ID, strings.ReplaceAll(string(cmdline), "\x00", " "), &ev)
	}
}
