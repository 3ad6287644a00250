package deployer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/config"
)

// The config a host gets over ssh is its own part: its host entry only, and the balancer's admin
// token only for the commands that drain or watch at the balancer (step, stop), not for look.
func TestAHostIsSentItsOwnPartOfTheConfigOnly(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	cfg.Balancer.AdminToken = "s3cret-admin-token"
	seen := filepath.Join(f.dir, "seen.yaml")
	wrapper := filepath.Join(f.dir, "zero502-tee")
	// tee copies what the host reads; it is left behind when zero502 exits (stdin stays open
	// until the deployer closes it) and holds none of the session's output, so the look ends.
	script := "#!/bin/bash\nif [ \"$2\" = look ]; then exec " + bin + " \"$@\" < <(tee -a " + seen + " 2>/dev/null); fi\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Status(context.Background(), cfg, Options{RemoteBinary: wrapper, Self: bin, Balancer: balancer.None{}}); err != nil {
		t.Fatalf("status: %v", err)
	}
	got, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the look never ran on host-a over ssh: %v", err)
	}
	if strings.Contains(string(got), "s3cret-admin-token") {
		t.Errorf("host look was sent the admin token:\n%s", got)
	}
	if !strings.Contains(string(got), "host-a") || strings.Contains(string(got), "host-b") {
		t.Errorf("host-a was sent:\n%s\nwant its own entry and not host-b's", got)
	}
	if d := New(cfg, Options{}); !strings.Contains(mustEncode(t, d.configFor(cfg.Hosts[0], []string{"host", "step"})), "s3cret-admin-token") {
		t.Error("a step's config lacks the admin token it needs to drain at the balancer")
	}
}

// A host whose look stops answering while its ssh connection lives holds no status (nor a
// deploy's re-verify, and the fleet lock with it): the look is cut after lookBudget, and the
// host is reported as not answering, the others as usual.
func TestAHostWhoseLookHangsHoldsNoStatus(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 3)
	_, cfg := f.remoteConfig(s, "hang.yaml", 2)
	wrapper := filepath.Join(f.dir, "zero502-hangs")
	script := "#!/bin/sh\nif [ \"$2\" = look ] && [ \"$6\" = host-a ]; then exec sleep 20; fi\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := Status(context.Background(), cfg, Options{RemoteBinary: wrapper, Self: bin, Balancer: balancer.None{}, lookBudget: 2 * time.Second})
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	for _, h := range st.Hosts {
		problems := strings.Join(h.Problems, "; ")
		hung := strings.Contains(problems, "zero502 host look did not answer within 2s")
		if hung != (h.Host == "host-a") {
			t.Errorf("%s: problems %q; want host-a alone reported as not answering within 2s", h.Host, problems)
		}
	}
}

func mustEncode(t *testing.T, c *config.Config) string {
	t.Helper()
	b, err := config.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Of rollout.max_unavailable a host over ssh is told only whether it drains early: the first
// hosts of each batch get 1 (their batch is themselves), the others 0, and the step there reads
// it back as the deployer decided.
func TestAHostIsToldWhetherItDrainsEarly(t *testing.T) {
	cfg := config.Defaults()
	cfg.Balancer.Kind = config.BalancerNone
	cfg.Rollout.Runtime, cfg.Rollout.Strategy, cfg.Rollout.Batch, cfg.Rollout.MaxUnavailable = config.RuntimeProcess, config.StartFirst, 2, 1
	cfg.Rollout.MaxUnavailableShare = 34
	cfg.Services = []config.Service{{Name: "web", Command: []string{"app"}, Ports: []int{8000, 9000}}}
	for i, name := range []string{"host-a", "host-b", "host-c"} {
		cfg.Hosts = append(cfg.Hosts, config.Host{Name: name, PortOffset: i})
	}
	d := New(cfg, Options{})
	for i, want := range []bool{true, false, true} {
		h := cfg.Hosts[i]
		if got := d.drainsEarly(h); got != want {
			t.Errorf("%s drains early: %t, want %t (batches of 2, rollout.max_unavailable 1)", h.Name, got, want)
		}
		sent, err := config.LoadBytes([]byte(mustEncode(t, d.configFor(h, []string{"host", "step"}))), "sent")
		if err != nil {
			t.Fatalf("%s: the config sent does not load: %v", h.Name, err)
		}
		if got := New(sent, Options{}).drainsEarly(sent.Hosts[0]); got != want {
			t.Errorf("%s, on the host: drains early %t (rollout.max_unavailable %d sent), want %t", h.Name, got, sent.Rollout.MaxUnavailable, want)
		}
	}
}
