package alb

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// An ELBv2 endpoint that takes the request and never answers is an error within callTimeout,
// never a wait without end: preflight and the re-verify between batches ask it on the deploy's
// context, which nothing else bounds, and the deploy holds the fleet lock meanwhile.
func TestAHangingELBv2IsAnErrorWithinTheCallTimeout(t *testing.T) {
	awsdouble.OfflineSDK(t)
	url := awsdouble.Silent(t)
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })

	arn := "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef"
	api, err := NewClient(context.Background(), config.Balancer{Region: "eu-west-1", TargetGroupARN: arn},
		ClientOptions{Endpoint: url, Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "x", "")})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Live(context.Background(), api, arn)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "ELBv2 did not answer within 300ms") {
			t.Fatalf("Live against an ELBv2 that never answers: %v; want an error saying it did not answer within the call timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Live still waiting on an ELBv2 that never answers after 20s (call timeout %s)", callTimeout)
	}
}
