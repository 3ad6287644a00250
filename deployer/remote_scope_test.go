package deployer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func mustEncode(t *testing.T, c *config.Config) string {
	t.Helper()
	b, err := config.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
