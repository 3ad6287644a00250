package secretsmanager

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// A Secrets Manager endpoint that takes the request and never answers is an error within
// callTimeout, never a wait without end: the deploy resolves its secrets on its own context,
// which nothing else bounds, as secrets.command is bounded by its timeout.
func TestAHangingSecretsManagerIsAnErrorWithinTheCallTimeout(t *testing.T) {
	awsdouble.OfflineSDK(t)
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", awsdouble.Silent(t))
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })

	api, err := NewClient(context.Background(), "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Lookup(context.Background(), api, "prod/app/", []string{"DB_PASSWORD"})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") || !strings.Contains(err.Error(), "prod/app/DB_PASSWORD") {
			t.Fatalf("Lookup against a Secrets Manager that never answers: %v; want an error naming the secret and the call timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Lookup still waiting on a Secrets Manager that never answers after 20s (call timeout %s)", callTimeout)
	}
}

// A Secrets Manager the request never reached (nothing listens there) is said as such, with what
// to check, not as a matter of credentials or IAM permissions: AWS never answered.
func TestASecretsManagerNotReachedSaysSoNotThatCredentialsAreWrong(t *testing.T) {
	awsdouble.OfflineSDK(t)
	srv := httptest.NewServer(nil)
	srv.Close() // nothing listens there: the calls fail to connect
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", srv.URL)
	api, err := NewClient(context.Background(), "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lookup(context.Background(), api, "prod/app/", []string{"DB_PASSWORD"})
	if err == nil || strings.Contains(err.Error(), "GetSecretValue on it") || !strings.Contains(err.Error(), "reaches Secrets Manager") ||
		!strings.Contains(err.Error(), "prod/app/DB_PASSWORD") {
		t.Fatalf("Lookup against an endpoint nothing listens on: %v; want it said that Secrets Manager was not reached, naming the secret", err)
	}
}
