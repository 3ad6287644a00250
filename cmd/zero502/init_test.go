package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

// init --from-compose writes a config zero502 loads, 0600 (it may hold env values), says what it
// did not honour, never replaces a file without --force, and refuses a broken Compose file.
func TestInitFromComposeWritesALoadableConfig(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(in, []byte("services:\n  web:\n    image: web:1\n    ports: [\"8080:8080\"]\n    volumes: [\"./data:/data\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "zero502.yaml")
	said, code := runCLI(t, "init", "--from-compose", in, "--out", out)
	if code != 0 || !strings.Contains(said, "services.web.volumes") {
		t.Fatalf("init: exit %d:\n%s\nwant 0 and the volumes named", code, said)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v; want a 0600 file", out, fi, err)
	}
	cfg, err := config.Load(out)
	if err != nil {
		t.Fatalf("the written config does not load: %v", err)
	}
	if s, ok := cfg.BalancedService(); !ok || s.Name != "web" || s.Image != "web:1" || s.Port != 8080 {
		t.Fatalf("balanced service %+v %v; want web:1 on 8080", s, ok)
	}
	if said, code := runCLI(t, "init", "--from-compose", in, "--out", out); code != 1 || !strings.Contains(said, "--force") {
		t.Fatalf("init over an existing file: exit %d:\n%s\nwant 1 naming --force", code, said)
	}
	if err := os.Chmod(out, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := runCLI(t, "init", "--from-compose", in, "--out", out, "--force"); code != 0 {
		t.Fatalf("init --force: exit %d", code)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s replaced with --force: %v %v; want 0600 again", out, fi, err)
	}
	if err := os.WriteFile(in, []byte("services: [broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if said, code := runCLI(t, "init", "--from-compose", in, "--out", filepath.Join(dir, "other.yaml")); code != 2 || !strings.Contains(said, in) {
		t.Fatalf("init of a broken file: exit %d:\n%s\nwant 2 naming it", code, said)
	}
}
