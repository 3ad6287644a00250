package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The alert webhook comes from a file (--alert-webhook-file) or $ZERO502_ALERT_WEBHOOK, so it
// is not in argv; its retries are logged with the URL redacted (scheme://host/…).
func TestAlertWebhookFromFileOrEnvIsLoggedRedacted(t *testing.T) {
	f := startDeadEdge(t)

	const secret = "T0000/B0000/s3cr3t-hook-token"
	var posts atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, secret) {
			http.Error(w, "wrong path", http.StatusNotFound)
			return
		}
		if posts.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable) // one retry, logged
		}
	}))
	defer hook.Close()
	url := hook.URL + "/services/" + secret
	file := filepath.Join(t.TempDir(), "webhook")
	if err := os.WriteFile(file, []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"survey", "--name", f.Addr().String(), "--insecure-skip-verify", "--interval", "50ms",
		"--budget", "40ms", "--rounds", "3", "--json", "--alert-confirm", "1"}
	for _, tc := range []struct {
		name  string
		extra []string
		env   string
	}{{"file", []string{"--alert-webhook-file", file}, ""}, {"env", nil, url}} {
		t.Run(tc.name, func(t *testing.T) {
			posts.Store(0)
			t.Setenv(alertWebhookEnv, tc.env)
			out, errOut, code := runEdgePick(t, append(args, tc.extra...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if posts.Load() != 2 {
				t.Fatalf("the webhook got %d posts, want 2 (a 503, then the delivery)\n%s", posts.Load(), errOut)
			}
			if strings.Contains(errOut, secret) {
				t.Fatalf("the log holds the webhook's secret:\n%s", errOut)
			}
			if !strings.Contains(errOut, hook.URL+"/…") {
				t.Fatalf("the retry is not logged with the redacted URL %s/…:\n%s", hook.URL, errOut)
			}
		})
	}
}
