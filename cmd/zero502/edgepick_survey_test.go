package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/alert"
	"github.com/zero502/zero502/infra/edge"
	"github.com/zero502/zero502/infra/edgepick"
)

func TestEdgePickSurveyReportsAForwarderWithADeadBackendAndAlertsOnce(t *testing.T) {
	f := startDeadEdge(t)
	edgeAddr := f.Addr().String()
	var mu sync.Mutex
	var alerts []alert.Alert
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a alert.Alert
		_ = json.NewDecoder(r.Body).Decode(&a)
		mu.Lock()
		alerts = append(alerts, a)
		mu.Unlock()
	}))
	defer hook.Close()

	t.Setenv(alertWebhookEnv, hook.URL)
	out, errOut, code := runEdgePick(t, "survey", "--name", edgeAddr, "--insecure-skip-verify", "--interval", "50ms",
		"--budget", "40ms", "--rounds", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one JSON line per round:\n%s", len(lines), out)
	}
	var r edgepick.SurveyRound
	if err := json.Unmarshal([]byte(lines[2]), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Edges) != 1 || r.Edges[0].State != edgepick.EdgeBackendDead || r.Edges[0].Connect <= 0 {
		t.Errorf("round %+v; want the edge backend-dead with a connect time", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(alerts) != 1 || alerts[0].Kind != edgepick.EdgeBackendDead || alerts[0].Subject != edgeAddr {
		t.Errorf("alerts %+v; want exactly one backend-dead alert for %s over three rounds", alerts, edgeAddr)
	}
}

func TestEdgePickSurveyRefusesBadFlags(t *testing.T) {
	t.Setenv(alertWebhookEnv, "")
	noScheme := filepath.Join(t.TempDir(), "webhook")
	if err := os.WriteFile(noScheme, []byte("hooks.example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(t.TempDir(), "open") // a directory anyone may write: its script is refused
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	mailer := filepath.Join(open, "mail.sh")
	if err := os.WriteFile(mailer, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"survey"}, "--name"},
		{[]string{"survey", "--name", "127.0.0.1:1", "--insecure-skip-verify", "--interval", "0s"}, "--interval"},
		{[]string{"survey", "--name", "127.0.0.1:1", "--insecure-skip-verify", "--alert-webhook-file", noScheme}, "http:// or https://"},
		{[]string{"survey", "--name", "127.0.0.1:1", "--insecure-skip-verify", "--alert-webhook", "https://hooks.example.com/s3cret", "--alert-confirm", "0"}, "unknown flag: --alert-webhook"},
		{[]string{"survey", "--name", "127.0.0.1:1", "--insecure-skip-verify", "--alert-confirm", "0"}, "--alert-confirm 0"},
		{[]string{"survey", "--name", "127.0.0.1:1", "--insecure-skip-verify", "--rounds", "1", "--alert-command", mailer}, "--alert-command"},
	} {
		_, errOut, code := runEdgePick(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}

// A webhook URL that does not parse is refused without its secret (path, query, userinfo) in
// the error: url.Parse's *url.Error quotes the whole URL, so it is redacted too.
func TestEdgePickSurveyWebhookThatDoesNotParseKeepsItsSecret(t *testing.T) {
	for _, raw := range []string{
		"https://hooks.slack.com/services/T0/B0/s3cr3t%zz",
		"https://hooks.slack.com:443x/services/s3cr3t",
		"https://hooks.slack.com/services/s3cr3t\tX",
		"https://user:s3cr3t@hooks.slack.com/services/%zz",
	} {
		a := &alertFlags{webhook: raw, attempts: 1, confirm: 1, timeout: time.Second}
		_, _, err := a.build(nil)
		if err == nil {
			t.Errorf("%q: accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "the alert webhook") {
			t.Errorf("%q: want an error naming the alert webhook without its secret: %v", raw, err)
		}
	}
	t.Setenv(alertWebhookEnv, "https://hooks.slack.com/services/T0/B0/s3cr3t%zz")
	_, errOut, code := runEdgePick(t, "survey", "--name", "127.0.0.1:1", "--insecure-skip-verify", "--rounds", "1")
	if code != 2 || strings.Contains(errOut, "s3cr3t") || !strings.Contains(errOut, "invalid URL escape") {
		t.Errorf("exit %d, want 2 saying why without the secret:\n%s", code, errOut)
	}
}

// startDeadEdge serves a real forwarder whose origin nobody listens on, until the test ends: TCP
// to it succeeds, a TLS handshake through it fails.
func startDeadEdge(t *testing.T) *edge.Forwarder {
	t.Helper()
	f := &edge.Forwarder{Listen: "127.0.0.1:0", Origins: []string{freeAddr(t)}, ConnectTimeout: time.Second}
	if err := f.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}
