package alarms

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// A CloudWatch endpoint that takes the request and never answers is an error within callTimeout,
// never a wait without end: the deployer asks on the deploy's context, which nothing else bounds
// while a batch is judged, and it holds the fleet lock meanwhile.
func TestAHangingCloudWatchIsAnErrorWithinTheCallTimeout(t *testing.T) {
	awsdouble.OfflineSDK(t)
	url := awsdouble.Silent(t)
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })

	w, err := NewWatcher(context.Background(), "eu-west-1", url)
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
