package acceptance

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Config mode: `zero502 lb --config FILE` takes listen, admin, backends and every number from the
// infra config, and the admin API shows exactly those numbers (the deployer's drift check reads
// them); an explicit flag still wins.

func TestConfigModeTakesEverythingFromTheConfig(t *testing.T) {
	t.Parallel()
	needLB(t)
	bs := []*backendProc{startBackend(t, "a"), startBackend(t, "b")}
	listen, admin := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	// The balanced service listens on port 1 plus each host's port offset: the offsets put the
	// two "hosts" on the two backends' ports.
	var hosts strings.Builder
	for i, b := range bs {
		_, port, _ := net.SplitHostPort(b.addr)
		p, _ := strconv.Atoi(port)
		fmt.Fprintf(&hosts, "  - name: host-%d\n    address: 127.0.0.1\n    port_offset: %d\n    state_dir: %s\n",
			i, p-1, filepath.Join(t.TempDir(), "host"))
	}
	cfg := fmt.Sprintf(`balancer:
  listen: %s
  admin: %s
  service: web
  interval: 300ms
  timeout: 150ms
  unhealthy_threshold: 3
  healthy_threshold: 2
  idle_timeout: 2s
  connect_timeout: 800ms
  header_timeout: 2500ms
  max_header_bytes: 20000
drain:
  window: 1500ms
  shutdown: 1s
  stop_grace: 4s
  max_recovery: 2s
app:
  keepalive_idle_timeout: 10s
rollout:
  runtime: process
services:
  - name: web
    command: ["{self}", "app", "--version", "{version}", "--port", "{port}"]
    port: 1
hosts:
%s`, listen, admin, hosts.String())
	path := filepath.Join(t.TempDir(), "zero502.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(t, nil, bins.zero502, "lb", "--config", path, "--healthy-threshold", "3")
	if err != nil {
		t.Fatal(err)
	}
	l := &lbProc{addr: listen, admin: admin, backends: bs, proc: p, client: directClient}
	if err := l.waitReady(15 * time.Second); err != nil {
		t.Fatalf("zero502 lb --config: %v\nlogs:\n%s", err, tail(p.logs.String(), 4000))
	}
	l.waitInRotation(t, 10*time.Second, bs...)

	// healthy_threshold 3: the explicit flag beats the file's 2.
	l.requireSettings(t, map[string]any{
		"listen": listen, "interval": "300ms", "timeout": "150ms", "unhealthy_threshold": 3.0,
		"healthy_threshold": 3.0, "idle_timeout": "2s", "connect_timeout": "800ms",
		"header_timeout": "2.5s", "max_header_bytes": 20000.0,
	})
	st := l.status(t)
	for _, b := range bs {
		if _, ok := st[b.addr]; !ok || len(st) != len(bs) {
			t.Errorf("/admin/backends %v, want exactly the config's targets", st)
		}
	}
	for name, n := range tally(l.sequence(t, 10)) {
		if n != 5 {
			t.Errorf("backend %q got %d of 10, want 5", name, n)
		}
	}
}
