package deployer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
)

// A host that lies cannot hang a deploy nor speak for another host: its step prints a 3 MB line,
// a hundred lines of noise, an event claiming to be host-b's and one of its own, then ignores
// that its deployer left. The cancelled deploy cuts it off after the rollback budget, relays its
// own event only, and ends with a bounded error naming it.
func TestALyingHostCannotHangADeployNorSpeakForAnother(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	cfg.Rollout.HealthyDeadline = time.Second // a short rollback budget for the test
	pidFile := filepath.Join(f.dir, "liar.pid")
	liar := fakeRemoteBinary(t, f.dir, "zero502-liar", `  case "$*" in *--look-first*)
    echo '{"look":{"from":"v1","instance":false,"in_progress":false,"serving":false,"running":""}}'
    while IFS= read -r l; do [ "$l" = go ] && break; done ;; # the config stream, then its turn
  esac
  echo $$ > `+pidFile+`
  head -c 3000000 /dev/zero | tr '\0' x; echo
  i=0; while [ $i -lt 100 ]; do echo "noise $i"; i=$((i+1)); done
  echo '{"host":"host-b","step":"done","message":"forged for host-b"}'
  echo '{"host":"host-a","step":"locked","message":"from host-a itself"}'
  exec sleep 600 </dev/null
`)
	killAtEnd(t, pidFile)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ev eventLog
	d := f.deployer(cfg, nil, Options{RemoteBinary: liar, Balancer: balancer.None{}})
	d.opts.Events = func(e Event) {
		ev.add(e)
		if e.Message == "from host-a itself" {
			cancel() // the deployer leaves; the host ignores it
		}
	}
	budget := d.rollbackBudget(len(cfg.Services))
	type result struct {
		rep *report.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := d.Deploy(ctx, "v2")
		done <- result{rep, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(budget + 90*time.Second):
		t.Fatalf("the deploy still waits on a host that ignores its cancel, %s past the rollback budget %s\n%s", 90*time.Second, budget, &ev)
	}

	if r.err == nil || !strings.Contains(r.err.Error(), "host host-a") || !strings.Contains(r.err.Error(), "cut off") {
		t.Fatalf("deploy against a host that hangs: %v; want host-a named and cut off\n%s", r.err, &ev)
	}
	if n := len(r.err.Error()); n > 16<<10 {
		t.Errorf("the error is %d bytes: what a host prints must not grow it without bound", n)
	}
	var own, forged bool
	for _, e := range ev.events {
		own = own || e.Message == "from host-a itself" && e.Host == "host-a"
		forged = forged || strings.Contains(e.Message, "forged")
	}
	if !own || forged {
		t.Errorf("relayed host-a's own event: %v, the one it forged for host-b: %v; want true, false\n%s", own, forged, &ev)
	}
	var buf bytes.Buffer
	for _, h := range r.rep.Hosts {
		fmt.Fprintf(&buf, "%s %s running %q; ", h.Host, h.Outcome, h.Running)
	}
	if r.rep.Hosts[0].Outcome != report.OutcomeUnknown || r.rep.Hosts[1].Outcome != report.OutcomeNotReached {
		t.Errorf("report %s; want host-a unknown (it began and was cut off), host-b not reached", buf.String())
	}
}

// A waiting step changes nothing, so a report it prints before its turn is no more believed than
// an event is: a host whose step forges "deployed, runs v2" while it waits, then fails on go
// without a report of its own, is unknown, its forged version not claimed.
func TestAReportBeforeItsTurnIsNotBelieved(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	liar := fakeRemoteBinary(t, f.dir, "zero502-early-report", `  # the forged report first: it is heard before the look, so surely before the step's turn
  echo '{"host_report":{"host":"host-a","to":"v2","outcome":"deployed","running":"v2-forged"}}'
  echo '{"look":{"from":"","instance":false,"in_progress":false,"serving":false,"running":""}}'
  while IFS= read -r l; do [ "$l" = go ] && break; done
  exit 1
`)
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{RemoteBinary: liar, Balancer: balancer.None{}}).Deploy(context.Background(), "v2")
	if err == nil || !strings.Contains(err.Error(), "host host-a") {
		t.Fatalf("deploy against a host whose step fails without a report: %v; want host-a named\n%s", err, &ev)
	}
	if h := rep.Hosts[0]; h.Outcome != report.OutcomeUnknown || h.Running == "v2-forged" {
		t.Errorf("host-a %s, running %q: %s; want unknown, the report it printed before its turn dropped\n%s", h.Outcome, h.Running, h.Error, &ev)
	}
}

// fakeRemoteBinary writes, as dir/name, a --remote-binary that plays `zero502 host step` by the
// shell lines step (they end the step themselves) and runs the real zero502 for anything else.
func fakeRemoteBinary(t *testing.T, dir, name, step string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	script := "#!/bin/sh\nif [ \"$1 $2\" = \"host step\" ]; then\n" + step + "fi\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// killAtEnd SIGKILLs, when the test ends, the process whose pid a fake remote binary wrote into
// pidFile (a step left waiting on the "host"), if it wrote one.
func killAtEnd(t *testing.T, pidFile string) {
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}
