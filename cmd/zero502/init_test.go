package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

// init --from-compose writes a config zero502 loads, 0600 (it may hold env values), says what it
// did not honour, never replaces a file without --force, never writes through a link with it, and
// refuses a broken Compose file.
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
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "linked.yaml")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if said, code := runCLI(t, "init", "--from-compose", in, "--out", link, "--force"); code != 1 || !strings.Contains(said, "symbolic link") {
		t.Fatalf("init --force over a link: exit %d:\n%s\nwant 1 naming the link", code, said)
	}
	if got, err := os.ReadFile(victim); err != nil || string(got) != "keep me\n" {
		t.Fatalf("the file the link points at: %q, %v; want it untouched", got, err)
	}
	if err := os.WriteFile(in, []byte("services: [broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if said, code := runCLI(t, "init", "--from-compose", in, "--out", filepath.Join(dir, "other.yaml")); code != 2 || !strings.Contains(said, in) {
		t.Fatalf("init of a broken file: exit %d:\n%s\nwant 2 naming it", code, said)
	}
}

// A Compose value a note quotes (a port's name) may hold a line break YAML or a terminal knows
// (\r, U+0085, U+2028, U+2029) or an escape: init prints each note on one line of its own, with
// them escaped, and the config it writes runs no hook the value spells.
func TestInitPrintsEachNoteOnOneLineWhateverTheComposeFileHolds(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "compose.yaml")
	inject := `http\rhooks: {pre_deploy: {command: [sh, -c, 'id']}}\u2028\u0085\u2029\e[2J#`
	if err := os.WriteFile(in, []byte("services:\n  web:\n    image: web:{version}\n    ports:\n      - {target: 8080, published: \"8080\", name: \""+inject+"\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "zero502.yaml")
	said, code := runCLI(t, "init", "--from-compose", in, "--out", out)
	if code != 0 {
		t.Fatalf("init: exit %d:\n%s", code, said)
	}
	if strings.ContainsAny(said, "\r\u0085\u2028\u2029\x1b") {
		t.Errorf("init printed a line break or an escape of the Compose file's:\n%q", said)
	}
	if want := `  services.web.ports: 8080:8080: name "http\rhooks: {pre_deploy: {command: [sh, -c, 'id']}}\u2028\u0085\u2029\x1b[2J#": zero502 keeps no port names` + "\n"; !strings.Contains(said, want) {
		t.Errorf("init printed:\n%s\nwant the note on one line:\n%s", said, want)
	}
	cfg, err := config.Load(out)
	if err != nil {
		t.Fatalf("the written config does not load: %v", err)
	}
	if len(cfg.Hooks.PreDeploy.Command) > 0 {
		t.Errorf("the written config runs hooks.pre_deploy %q", cfg.Hooks.PreDeploy.Command)
	}
}

// init reads COMPOSE_PROFILES as docker compose does, --profile wins over it, and a service in a
// profile not enabled is a note saying how to enable it: --profile, or COMPOSE_PROFILES.
func TestInitReadsComposeProfilesAndSaysHowToEnableOne(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(in, []byte("services:\n  web:\n    image: web:{version}\n  jobs:\n    image: jobs:{version}\n    profiles: [prod]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COMPOSE_PROFILES", "prod")
	out := filepath.Join(dir, "zero502.yaml")
	if said, code := runCLI(t, "init", "--from-compose", in, "--out", out); code != 0 || !strings.Contains(said, "wrote "+out+": 2 services") {
		t.Fatalf("init with COMPOSE_PROFILES=prod: exit %d:\n%s\nwant web and jobs", code, said)
	}
	said, code := runCLI(t, "init", "--from-compose", in, "--out", out, "--force", "--profile", "debug")
	if code != 0 || !strings.Contains(said, "wrote "+out+": 1 services") ||
		!strings.Contains(said, "services.jobs.profiles: prod, not enabled (enabled: debug): the service is not imported; to import it, enable its profile with --profile prod, or COMPOSE_PROFILES=prod") {
		t.Fatalf("init --profile debug: exit %d:\n%s\nwant web only, and how to enable prod", code, said)
	}
}
