package watchdog_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/secrets"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// A heal starts the service with the secrets its spec was published with: the watchdog has no
// source of its own, it reads the values kept 0600 beside the spec, and its log never shows them.
func TestAHealStartsTheServiceWithItsSecret(t *testing.T) {
	dir := t.TempDir()
	cfg := processConfig(t, dir, tcpserver.FreePort(t))
	cfg.Services[1].Secrets = []string{"API_TOKEN"}
	cfg.SecretValues = map[string]secrets.Value{"API_TOKEN": "tok-3f9a"}
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cfg, rt)
	f.deploy("v1")
	f.kill("worker")
	for range cfg.Watchdog.HealAfter {
		f.tick()
	}
	got := f.running("worker")
	if len(got) != 1 {
		t.Fatalf("worker runs %+v after the heal, want one instance\nlog:\n%s", got, f.logs)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%s/environ", strings.TrimPrefix(got[0].ID, "pid:")))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(environ, []byte("\x00API_TOKEN=tok-3f9a\x00")) && !bytes.HasPrefix(environ, []byte("API_TOKEN=tok-3f9a\x00")) {
		t.Errorf("the healed worker's environment lacks API_TOKEN: %q", environ)
	}
	if strings.Contains(f.logs.String(), "tok-3f9a") {
		t.Errorf("the watchdog's log shows the secret:\n%s", f.logs)
	}
}
