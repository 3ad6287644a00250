package deployer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// A Ctrl-C at the deployer's terminal reaches its whole process group: the deployer turns it into
// ending each session and waits for the hosts' reports (a rollback), holding the fleet lock until
// it exits. The ssh clients, in a group of their own, do not die with it, so the lock host does
// not free the fleet lock while the deployer still rolls back.
func TestCtrlCKeepsTheFleetLockUntilTheDeployerExits(t *testing.T) {
	s := startSSHD(t)
	f := newFleet(t, 2)
	cfg := f.load(f.config("ctrlc.yaml", defaultValues()))
	cfg.Hosts[1].SSH, cfg.Hosts[1].Address = s.target(), "127.0.0.1"
	cfg.Rollout.LockHost = cfg.Hosts[1].Name
	path := f.write("ctrlc.yaml", cfg)
	cfg = f.load(path)
	f.startLB(path)
	if _, err := f.deployer(cfg, nil, Options{RemoteBinary: bin}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	out := &syncbuffer.Buffer{}
	deploy := exec.Command(bin, "deploy", "--config", path, "--version", "v2", "--remote-binary", bin)
	deploy.Stdout, deploy.Stderr = out, out
	deploy.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a shell job: its own process group
	if err := deploy.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = deploy.Wait(); close(exited) }()
	testmain.Track(t, func() { _ = deploy.Process.Kill(); <-exited })
	poll.Until(t, 60*time.Second, "host-a's step under way", func() bool { return strings.Contains(out.String(), "spec published") })
	lockPath := cfg.FleetLockPath()
	if held, _, _ := hostlock.Held(lockPath); !held {
		t.Fatalf("the fleet lock %s is not held during the deploy\n%s", lockPath, out)
	}
	if err := syscall.Kill(-deploy.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C: the terminal signals the job's group
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		select {
		case <-exited:
			return
		default:
		}
		if held, _, _ := hostlock.Held(lockPath); !held {
			select {
			case <-exited:
				return // freed as the deployer ended
			case <-time.After(time.Second):
				t.Fatalf("the fleet lock was freed while the deployer still ran after Ctrl-C (rolling back)\n%s", out)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the deployer did not exit within 2m of Ctrl-C\n%s", out)
}

// lostHold is a fleet lock whose ssh session to the lock host ended: the lock host freed it.
type lostHold struct{}

func (lostHold) Release() error { return nil }
func (lostHold) Lost() error    { return errors.New("the fleet lock's ssh session to host-x ended") }

// A failed verdict once the fleet lock is lost changes no host: another deploy may hold the fleet
// by then. Each host's report says it was not rolled back, what it runs and what to do.
func TestNoRollbackChangesAHostOnceTheFleetLockIsLost(t *testing.T) {
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("rb.yaml", v))
	for i := range cfg.Hosts {
		cfg.Hosts[i].SSH, cfg.Hosts[i].Address = "root@127.0.0.1:1", "127.0.0.1"
	}
	cfg = f.load(f.write("rb.yaml", cfg))
	log := filepath.Join(f.dir, "ssh.log")
	fake := filepath.Join(f.dir, "fake-ssh")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$*\" >> "+log+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := f.deployer(cfg, nil, Options{RemoteBinary: "zero502", SSH: fake, Balancer: balancer.None{}})
	d.fleet = lostHold{}
	rep := &report.Report{Hosts: []report.HostReport{
		{Host: "host-a", From: "v1", To: "v2", Outcome: report.OutcomeDeployed, Running: "v2"},
		{Host: "host-b", From: "v1", To: "v2", Outcome: report.OutcomeDeployed, Running: "v2"}}}
	err := d.rollBackFleet(context.Background(), "v2", rep, 1, 2, &VerdictError{Hosts: []string{"host-b"}})
	if data, _ := os.ReadFile(log); strings.Contains(string(data), "host step") {
		t.Fatalf("rollBackFleet ran steps on the hosts after the fleet lock was lost (err %v); ssh ran:\n%s", err, data)
	}
	for _, hr := range rep.Hosts {
		if hr.Running != "v2" || !strings.Contains(hr.Error, "not rolled back (it runs v2): the fleet lock was lost") {
			t.Errorf("%s: runs %q, error %q; want v2 and why it was not rolled back", hr.Host, hr.Running, hr.Error)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "the fleet lock was lost") {
		t.Errorf("the deploy's error %v does not say the fleet lock was lost", err)
	}
}

// A step opened at its host's turn (its preflight session had ended) prints its look and is told
// go only then, as preflight's are: lost after go, before its first event, it may have run, so
// the host's version is unknown, never "unreachable, not changed"; lost before its look, it
// changed nothing.
func TestAStepOpenedAtItsTurnIsUnknownOnlyOnceToldGo(t *testing.T) {
	for _, tc := range []struct {
		name, step string
		want       string
	}{
		{"lost after go", `echo '{"look":{"from":"v1","instance":false,"in_progress":false,"serving":false,"running":"v1"},"asks":false}'
while read -r line; do [ "$line" = go ] && { touch $BEGAN; exit 255; }; done; exit 255`, report.OutcomeUnknown},
		{"lost before its look", `exit 255`, report.OutcomeUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, 2)
			v := defaultValues()
			v.Kind = "none"
			cfg := f.load(f.config("fresh.yaml", v))
			cfg.Hosts[1].SSH, cfg.Hosts[1].Address = "root@127.0.0.1:1", "127.0.0.1"
			cfg.Rollout.LockHost = cfg.Hosts[0].Name
			cfg = f.load(f.write("fresh.yaml", cfg))
			began := filepath.Join(f.dir, "began")
			opened := filepath.Join(f.dir, "opened")
			fake := filepath.Join(f.dir, "fake-ssh")
			// The first --look-first session (preflight's) prints a look and ends: the batch opens
			// another at host-b's turn, which plays tc.step.
			script := "#!/bin/sh\nBEGAN=" + began + "\ncase \"$*\" in\n*\" host step \"*\"--look-first\"*)\n" +
				"  if [ ! -e " + opened + " ]; then touch " + opened + "\n" +
				"    echo '{\"look\":{\"from\":\"v1\",\"instance\":false,\"in_progress\":false,\"serving\":false,\"running\":\"v1\"},\"asks\":true}'; exit 255; fi\n" +
				"  " + tc.step + " ;;\nesac\nexit 255\n"
			if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			var ev eventLog
			rep, _ := f.deployer(cfg, &ev, Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{}}).Deploy(context.Background(), "v2")
			b := rep.Hosts[1]
			if b.Outcome != tc.want {
				t.Fatalf("host-b: %q, runs %q (%s); want %q\nevents:\n%s", b.Outcome, b.Running, b.Error, tc.want, &ev)
			}
			if _, err := os.Stat(began); (err == nil) != (tc.want == report.OutcomeUnknown) {
				t.Fatalf("the step began: %v; want it begun only once told go", err == nil)
			}
		})
	}
}
