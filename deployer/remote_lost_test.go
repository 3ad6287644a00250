package deployer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// A host over ssh finished earlier in the deploy (host-a) goes down before the final re-verify:
// its service is killed once host-b has verified. Cut off from ssh too (a host lost, link and
// all), it is "unreachable after its step began: unknown" with no version claimed, not failed on
// v2; still reachable, it is rolled back to v1 by a step there, as a local host would be.
func TestAHostLostBeforeReverifyOverSSH(t *testing.T) {
	t.Parallel()
	for _, cut := range []bool{true, false} {
		name := "reachable"
		if cut {
			name = "unreachable"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startSSHD(t)
			f := newFleet(t, 2)
			path, cfg := f.remoteConfig(s, "reverify.yaml", 2)
			f.startLB(path)
			ctx := context.Background()
			if _, err := f.deployer(cfg, nil, Options{RemoteBinary: bin}).Deploy(ctx, "v1"); err != nil {
				t.Fatalf("deploy v1: %v", err)
			}
			cutFile := filepath.Join(f.dir, "cut-host-a")
			// The ssh client: every session of host-a's fails as ssh does when it cannot get
			// there, once the test has cut it.
			wrapper := f.sshWrapper(`case "$*" in *host-a*) [ -e ` + cutFile + ` ] && exit 255 ;; esac`)
			var ev eventLog
			d := f.deployer(cfg, nil, Options{RemoteBinary: bin, SSH: wrapper})
			lost := false
			d.opts.Events = func(e Event) {
				ev.add(e)
				if e.Host != "host-b" || e.Step != stepVerified || lost {
					return
				}
				lost = true
				if in, ok := f.instances("host-a")["web"]; ok {
					if _, err := f.runtimes["host-a"].Stop(context.Background(), in, 0); err != nil {
						t.Errorf("kill host-a's web: %v", err)
					}
				}
				if cut {
					if err := os.WriteFile(cutFile, nil, 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			rep, err := d.Deploy(ctx, "v2")
			if !lost {
				t.Fatalf("host-b never verified: %v\nevents:\n%s", err, &ev)
			}
			if err == nil || !strings.Contains(err.Error(), "host host-a") {
				t.Errorf("deploy with host-a down at the final re-verify: %v; want an error naming host-a", err)
			}
			a, b := rep.Hosts[0], rep.Hosts[1]
			if b.Outcome != report.OutcomeDeployed || b.Running != "v2" {
				t.Errorf("host-b: %q, runs %q; want deployed v2", b.Outcome, b.Running)
			}
			if cut {
				if a.Outcome != report.OutcomeUnknown || a.Running != "" || !strings.Contains(a.Error, "unreachable over ssh when re-verified") {
					t.Errorf("host-a, unreachable at the re-verify: %q, runs %q, error %q; want %q, no version claimed\nevents:\n%s",
						a.Outcome, a.Running, a.Error, report.OutcomeUnknown, &ev)
				}
				return
			}
			if a.Outcome != report.OutcomeRolledBack || a.Running != "v1" || a.From != "v1" || a.To != "v2" {
				t.Errorf("host-a, reachable and down at the re-verify: %s → %s %q, runs %q, error %q; want v1 → v2 rolled back, running v1\nevents:\n%s",
					a.From, a.To, a.Outcome, a.Running, a.Error, &ev)
			}
			if v := f.versions()["host-a"]; v != "v1" {
				t.Errorf("host-a runs %q, want v1 (rolled back on the host)", v)
			}
		})
	}
}

// Just before go the deployer asks the waiting step whether it is there (turnAsk). A step that
// answers is told go, and a partition after that (its session lost before any event of it
// arrives: ssh exits 255) leaves the host unknown, no version claimed; one that does not answer
// within turnAskBudget (its host went silent while it waited: a pulled cable that ssh has not
// noticed yet) is never told go, so the host is known unchanged: "unreachable, not changed",
// still on v1. A step of a zero502 that predates the question is told go at once, and lost after
// it is unknown too. The ssh client is a fake that plays the host: it prints the look, answers or
// not, and exits 255 on go (and 255 for any other session, as a host cut off would).
func TestAWaitingStepIsToldGoOnlyOnceItAnsweredThatItIsThere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		asks    bool   // its look says it answers "ready?"
		answer  string // the fake step's reply to "ready?" ("" none)
		outcome string
		running string
		says    string
		toldGo  bool
	}{
		{"silent", true, "", report.OutcomeUnreachable, "v1", "did not answer within " + turnAskBudget.String(), false},
		{"answers, then lost", true, `{"ready":true}`, report.OutcomeUnknown, "", "what it runs is unknown", true},
		{"predates the question, lost after go", false, "", report.OutcomeUnknown, "", "what it runs is unknown", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			told := filepath.Join(t.TempDir(), "told-go")
			f, cfg, fake := fakeStepHost(t, `{"look":{"from":"v1","instance":false,"in_progress":false,"serving":false,"running":"v1"},"asks":`+fmt.Sprint(tc.asks)+`}`,
				`"ready?") [ -n '`+tc.answer+`' ] && echo '`+tc.answer+`' ;;
	go) touch `+told+`; exit 255 ;;`)
			var ev eventLog
			rep, err := f.deployer(cfg, &ev, Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{}}).Deploy(context.Background(), "v2")
			if err == nil {
				t.Fatalf("deploy with host-a lost: no error\nevents:\n%s", &ev)
			}
			a := rep.Hosts[0]
			if a.Outcome != tc.outcome || a.Running != tc.running || !strings.Contains(a.Error, tc.says) {
				t.Errorf("host-a: %q, runs %q, error %q; want %q, running %q, saying %q\nevents:\n%s",
					a.Outcome, a.Running, a.Error, tc.outcome, tc.running, tc.says, &ev)
			}
			if _, err := os.Stat(told); (err == nil) != tc.toldGo {
				t.Errorf("host-a's step told go: %v, want %v", err == nil, tc.toldGo)
			}
		})
	}
}

// A host over ssh whose step never gets to go (its connection lost while it waited its turn) is
// "unreachable, not changed", and it runs what its look saw running: nothing here, its service
// stopped, though its published spec still names v1.
func TestAnUnreachableHostRunsWhatItsLookSaw(t *testing.T) {
	t.Parallel()
	f, cfg, fake := fakeStepHost(t, `{"look":{"from":"v1","instance":false,"in_progress":false,"serving":false,"running":""},"asks":true}`,
		`go) exit 255 ;;`)
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{}}).Deploy(context.Background(), "v2")
	if err == nil {
		t.Fatalf("no error\nevents:\n%s", &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeUnreachable || a.Running != "" || a.From != "v1" {
		t.Errorf("host-a: outcome %q, runs %q, from %q; want %q, running nothing (what its look saw), from v1\nevents:\n%s",
			a.Outcome, a.Running, a.From, report.OutcomeUnreachable, &ev)
	}
}

// fakeSSHFleet is a fleet of two hosts without a balancer view (config name) whose host-a is
// reached over ssh, through the fake ssh client a test writes at f.dir/fake-ssh, and whose fleet
// lock lives on host lockHost (0: host-a, 1: host-b).
func fakeSSHFleet(t *testing.T, name string, lockHost int) (*fleet, *config.Config) {
	t.Helper()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config(name, v))
	cfg.Hosts[0].SSH, cfg.Hosts[0].Address = "root@127.0.0.1:1", "127.0.0.1" // host-a: the fake
	cfg.Rollout.LockHost = cfg.Hosts[lockHost].Name
	return f, f.load(f.write(name, cfg))
}

// fakeStepHost is a fleet of two hosts without a balancer view whose host-a is reached over ssh
// through a fake ssh client, at the path it returns, that plays host-a's step: it prints look as
// the step's look, then runs the shell case arms onLine for each line the deployer sends, and
// exits 255 at the end and for any other session, as a host cut off would.
func fakeStepHost(t *testing.T, look, onLine string) (*fleet, *config.Config, string) {
	t.Helper()
	f, cfg := fakeSSHFleet(t, "ask.yaml", 1)
	fake := filepath.Join(f.dir, "fake-ssh")
	script := `#!/bin/sh
case "$*" in *" host step "*"--look-first"*) ;; *) exit 255 ;; esac
echo '` + look + `'
while IFS= read -r line; do
	case "$line" in
	` + onLine + `
	esac
done
exit 255
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return f, cfg, fake
}

// A host whose zero502 predates --look-first gets a step that starts as soon as ssh reaches it
// (opened without --look-first). Its session lost before any event of it arrived (the host gone
// since), the host is "unreachable after its step began: unknown" with no version claimed, not
// "unreachable, not changed" on its preflight version: the step may have begun changing it.
func TestAStepOfAnOlderHostLostBeforeItsFirstEventIsUnknown(t *testing.T) {
	t.Parallel()
	f, cfg := fakeSSHFleet(t, "old.yaml", 1)
	began := filepath.Join(f.dir, "step-began")
	script := `#!/bin/sh
case "$*" in
*" host step "*"--look-first"*) echo 'Error: unknown flag: --look-first' >&2; exit 2 ;;
*" host step "*) touch ` + began + `; exit 255 ;; # began (it publishes, drains...), then the connection drops
*" host look "*) [ -e ` + began + ` ] && exit 255 # preflight's look; once the step began the host is gone
	echo '{"from":"v1","instance":false,"in_progress":false,"serving":false,"running":"v1"}'; exit 0 ;;
esac
exit 255
`
	rep, ev := failedDeployThrough(t, f, cfg, script)
	if _, serr := os.Stat(began); serr != nil {
		t.Fatalf("the plain step never ran: %v\n%s", serr, ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeUnknown || a.Running == "v1" {
		t.Errorf("host-a: outcome %q, running %q (error %s); its step was started on the host, so it must be %q with no version claimed",
			a.Outcome, a.Running, a.Error, report.OutcomeUnknown)
	}
}

// A host over ssh that is unreachable and not changed is said to run what a look saw running,
// never its published spec's version. Here preflight's look is the only one (its waiting step's
// session was lost before its turn, and the session opened at its turn never reached the host):
// when it saw v1 running the host runs v1; when it saw nothing running (the published spec
// names v1) it runs nothing known, not v1.
func TestAnUnreachableHostRunsWhatPreflightsLookSawNotWhatItOnlyPublished(t *testing.T) {
	t.Parallel()
	for _, running := range []string{"v1", ""} {
		t.Run("running "+fmt.Sprintf("%q", running), func(t *testing.T) {
			t.Parallel()
			f, cfg := fakeSSHFleet(t, "pub.yaml", 1)
			seen := filepath.Join(f.dir, "looked-once")
			fake := filepath.Join(f.dir, "fake-ssh")
			script := `#!/bin/sh
case "$*" in *" host step "*"--look-first"*) ;; *) exit 255 ;; esac
[ -e ` + seen + ` ] && exit 255 # the session opened at its turn: the host is gone
touch ` + seen + `
echo '{"look":{"from":"v1","instance":false,"in_progress":false,"serving":false,"running":"` + running + `"},"asks":true}'
exit 255 # the waiting step's session is lost before its turn
`
			if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			var ev eventLog
			d := f.deployer(cfg, nil, Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{}})
			d.opts.Events = func(e Event) {
				ev.add(e)
				if e.Step != stepPreflight || !strings.HasPrefix(e.Message, "invariants hold") {
					return
				}
				// Preflight is over: the batch takes the waiting step only once its session is
				// gone (so a fresh one is opened), as a host cut long enough before its turn is.
				d.turns.mu.Lock()
				w := d.turns.by["host-a"]
				d.turns.mu.Unlock()
				if w == nil {
					t.Error("preflight left no waiting step for host-a")
					return
				}
				select {
				case <-w.ended:
				case <-time.After(10 * time.Second):
					t.Error("host-a's waiting step's session did not end")
				}
			}
			rep, err := d.Deploy(context.Background(), "v2")
			if err == nil {
				t.Fatalf("no error\n%s", &ev)
			}
			a := rep.Hosts[0]
			if a.Outcome != report.OutcomeUnreachable {
				t.Fatalf("host-a: outcome %q; want %q (setup)\n%s", a.Outcome, report.OutcomeUnreachable, &ev)
			}
			if a.Running != running {
				t.Errorf("host-a: report says it runs %q (from %q); the only look of it saw %q running (v1 is its published spec)", a.Running, a.From, running)
			}
		})
	}
}

// A host whose zero502 predates --look-first gets a step that would begin as soon as ssh logged
// in. When ssh says it never did (it could not connect), nothing ran: the host is "unreachable,
// not changed", not unknown, and the read-back's look says what it runs.
func TestAStepOfAnOlderHostThatSSHNeverReachedChangedNothing(t *testing.T) {
	t.Parallel()
	f, cfg := fakeSSHFleet(t, "old-never.yaml", 1)
	script := `#!/bin/sh
case "$*" in
*" host step "*"--look-first"*) echo 'Error: unknown flag: --look-first' >&2; exit 2 ;;
*" host step "*) echo 'ssh: connect to host 10.0.0.9 port 22: Connection timed out' >&2; exit 255 ;;
*" host look "*) echo '{"from":"v1","instance":false,"in_progress":false,"serving":false,"running":"v1"}'; exit 0 ;;
esac
exit 255
`
	rep, ev := failedDeployThrough(t, f, cfg, script)
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeUnreachable || a.Running != "v1" || !strings.Contains(a.Error, "unreachable and was not changed") {
		t.Errorf("host-a: outcome %q, running %q, error %q; ssh never logged in, so want %q, running v1 (the read-back's look)\n%s",
			a.Outcome, a.Running, a.Error, report.OutcomeUnreachable, ev)
	}
}

// failedDeployThrough deploys v2 to the fakeSSHFleet f (config cfg) through the fake ssh client
// script, written at f.dir/fake-ssh, and returns the report and the events of the deploy, which
// must fail.
func failedDeployThrough(t *testing.T, f *fleet, cfg *config.Config, script string) (*report.Report, *eventLog) {
	t.Helper()
	fake := filepath.Join(f.dir, "fake-ssh")
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{}}).Deploy(context.Background(), "v2")
	if err == nil {
		t.Fatalf("no error\n%s", &ev)
	}
	return rep, &ev
}
