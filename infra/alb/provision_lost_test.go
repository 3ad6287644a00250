package alb_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/internal/testrig/albtest"
	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// through is the SDK client to the ELBv2 double d through a proxy on loopback that hands every
// request to serve with its Action, for a test to drop or refuse some of them.
func through(t *testing.T, d *albtest.Double, serve func(w http.ResponseWriter, r *http.Request, action string)) alb.API {
	t.Helper()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		serve(w, r, form.Get("Action"))
	}))
	t.Cleanup(proxy.Close)
	api, err := alb.NewClient(context.Background(), d.Balancer, alb.ClientOptions{
		Endpoint: proxy.URL, Credentials: credentials.NewStaticCredentialsProvider(albtest.AccessKeyID, albtest.SecretAccessKey, ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// refuseModify answers ModifyTargetGroup with AccessDenied, as for a role without the action.
func refuseModify(d *albtest.Double) func(w http.ResponseWriter, r *http.Request, action string) {
	return func(w http.ResponseWriter, r *http.Request, action string) {
		if action == "ModifyTargetGroup" {
			awsdouble.WriteError(w, elbv2double.Namespace, awsdouble.NewRequestID(w), awsdouble.Errorf(http.StatusForbidden,
				"AccessDenied", "User is not authorized to perform: elasticloadbalancing:ModifyTargetGroup"))
			return
		}
		d.Server.ServeHTTP(w, r)
	}
}

// A ModifyTargetGroup that ELBv2 applied but whose answer never arrived (the connection dropped
// after the request went through) is not "nothing was changed": the target group runs the new
// health check. Provision must not tell the operator the group is untouched when it cannot know.
func TestProvisionDoesNotSayNothingChangedWhenTheAnswerWasLost(t *testing.T) {
	d := albtest.Start(t, nil, elbv2double.TargetGroup{Name: "web", Port: 8000})
	api := through(t, d, func(w http.ResponseWriter, r *http.Request, action string) {
		d.Server.ServeHTTP(w, r) // ELBv2 does the work …
		if action == "ModifyTargetGroup" {
			panic(http.ErrAbortHandler) // … and the connection drops before the answer is read
		}
	})
	_, err := alb.Provision(context.Background(), api, d.Balancer, false)
	if err == nil {
		t.Fatal("Provision succeeded though no ModifyTargetGroup answer arrived")
	}
	if s, _ := d.Server.Settings(d.ARN); s.Interval != d.Balancer.Interval {
		t.Fatalf("the double runs interval %s, want the config's %s: the test did not reach ELBv2", s.Interval, d.Balancer.Interval)
	}
	if strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Provision says nothing was changed, but the target group now runs the new health check: %v", err)
	}
	if !strings.Contains(err.Error(), "provision --dry-run") {
		t.Fatalf("the error does not say what to do (run provision --dry-run to see what the group runs): %v", err)
	}
}

// A ModifyTargetGroup ELBv2 refused (a role without the IAM action) changed nothing, and says so.
func TestProvisionRefusedByELBv2SaysNothingChanged(t *testing.T) {
	d := albtest.Start(t, nil, elbv2double.TargetGroup{Name: "web", Port: 8000})
	_, err := alb.Provision(context.Background(), through(t, d, refuseModify(d)), d.Balancer, false)
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("ModifyTargetGroup refused with AccessDenied: %v; want AccessDenied and nothing was changed", err)
	}
}

// zero502 provision prints the diff Provision returns, error or not: after a failed Modify it must
// not end with "applied … read back and verified".
func TestAFailedProvisionsTableDoesNotSayApplied(t *testing.T) {
	d := albtest.Start(t, nil, elbv2double.TargetGroup{Name: "web", Port: 8000})
	diff, err := alb.Provision(context.Background(), through(t, d, refuseModify(d)), d.Balancer, false)
	if err == nil {
		t.Fatal("Provision succeeded though ModifyTargetGroup was refused")
	}
	var out strings.Builder
	if err := diff.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "read back and verified") {
		t.Fatalf("the table of a provision that failed says the changes were applied:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "not applied") {
		t.Fatalf("the table of a provision that failed does not say the changes were not applied:\n%s", out.String())
	}
}
