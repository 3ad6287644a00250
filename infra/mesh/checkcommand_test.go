package mesh

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openScript writes a check script that touches a marker file into a directory anyone may write
// (0777), and returns the script and the marker.
func openScript(t *testing.T) (script, marker string) {
	t.Helper()
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	marker = filepath.Join(t.TempDir(), "ran")
	script = filepath.Join(open, "check.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, marker
}

// The check command decides whether this server is in rotation, so what it runs is held to the
// trust rule (infra/trust, as a hook): a script in a directory another user may write, named
// alone or with arguments, never runs.
func TestCheckCommandInAWorldWritableDirectoryIsRefused(t *testing.T) {
	script, marker := openScript(t)
	for _, command := range []string{script, script + " --quiet"} {
		err := runCheck(context.Background(), command, 5*time.Second)
		if _, serr := os.Stat(marker); serr == nil {
			t.Fatalf("runCheck ran %q from a 0777 directory (err %v); want it refused by the trust rule before it runs", command, err)
		}
		if err == nil || !strings.Contains(err.Error(), "0777") {
			t.Errorf("runCheck(%q) = %v; want a refusal naming the directory's mode 0777", command, err)
		}
	}
}

// mesh serve refuses at startup a --check-command the trust rule refuses, naming the flag, the
// command and why.
func TestNodeValidateRefusesAnUntrustedCheckCommand(t *testing.T) {
	script, marker := openScript(t)
	n := &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.1:1"}, CheckCommand: script}
	err := n.Validate()
	if err == nil {
		t.Fatal("Validate accepted a check command in a 0777 directory")
	}
	for _, w := range []string{"--check-command", script, "0777"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q: %v", w, err)
		}
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Error("Validate ran the check command")
	}
}

// The check command gets the mesh's environment without its secrets: not the mesh key (which
// signs bulletins and routes) nor the alert webhook.
func TestCheckCommandDoesNotGetTheMeshKey(t *testing.T) {
	t.Setenv("ZERO502_MESH_KEY", "0123456789abcdef0123456789abcdef")
	t.Setenv("ZERO502_ALERT_WEBHOOK", "https://hooks.example.test/secret")
	err := runCheck(context.Background(), `test -z "$ZERO502_MESH_KEY" && test -z "$ZERO502_ALERT_WEBHOOK"`, 5*time.Second)
	if err != nil {
		t.Fatalf("the check command saw $ZERO502_MESH_KEY or $ZERO502_ALERT_WEBHOOK: %v; want the secret variables removed from its environment", err)
	}
}
