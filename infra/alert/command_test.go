package alert

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The alert command is held to the trust rule (infra/trust, as a hook): a script in a directory
// another user may write never runs, Send fails naming it and the directory's mode, and
// Validate refuses it naming --alert-command.
func TestAnAlertCommandInAWorldWritableDirectoryIsRefused(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(open, "mail.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Sender{Command: script + " ops@example.test"}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--alert-command") || !strings.Contains(err.Error(), "0777") {
		t.Errorf("Validate = %v; want a refusal naming --alert-command and the directory's mode 0777", err)
	}
	err := s.Send(context.Background(), Alert{Source: "t", Subject: "b", Kind: "x"})
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatalf("Send ran %s from a 0777 directory (err %v); want it refused before it runs", script, err)
	}
	if err == nil || !strings.Contains(err.Error(), script) {
		t.Errorf("Send = %v; want a refusal naming %s", err, script)
	}
}

// The alert command gets the environment without zero502's secrets: not the alert webhook, not
// the mesh key.
func TestTheAlertCommandDoesNotGetTheSecrets(t *testing.T) {
	t.Setenv("ZERO502_MESH_KEY", "0123456789abcdef0123456789abcdef")
	t.Setenv("ZERO502_ALERT_WEBHOOK", "https://hooks.example.test/secret")
	s := &Sender{Command: `test -z "$ZERO502_MESH_KEY" && test -z "$ZERO502_ALERT_WEBHOOK"`}
	if err := s.Send(context.Background(), Alert{Source: "t", Subject: "b", Kind: "x"}); err != nil {
		t.Fatalf("the alert command saw a secret variable: %v; want them removed from its environment", err)
	}
}
