package alarms

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A CloudWatch endpoint that takes the request and never answers is an error within callTimeout,
// never a wait without end: the deployer asks on the deploy's context, which nothing else bounds
// while a batch is judged, and it holds the fleet lock meanwhile.
func TestAHangingCloudWatchIsAnErrorWithinTheCallTimeout(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
	} {
		t.Setenv(k, v)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })

	w, err := NewWatcher(context.Background(), "eu-west-1", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Firing(context.Background(), []string{"web-5xx"})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") || !strings.Contains(err.Error(), "eu-west-1") {
			t.Fatalf("Firing against a CloudWatch that never answers: %v; want an error saying it did not answer within the call timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Firing still waiting on a CloudWatch that never answers after 20s (call timeout %s)", callTimeout)
	}
}
