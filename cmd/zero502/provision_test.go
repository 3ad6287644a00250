package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/alb/elbv2double"
)

// zero502 provision runs in process against an ELBv2 double; the SDK's default chain finds the
// test's static credentials in the environment.
func TestProvisionCommandAppliesThenSaysNoChangesAndRefusesOutOfRange(t *testing.T) {
	dir := t.TempDir()
	double, srv := startELBv2Double(t, dir)
	arn := double.AddTargetGroup(elbv2double.TargetGroup{Name: "mythex-api", Port: 8000})
	cfg := filepath.Join(dir, "alb.yaml")
	yaml := "balancer:\n  kind: alb\n  region: eu-west-1\n  target_group_arn: " + arn + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}

	out, code := runCLI(t, "provision", "--config", cfg, "--endpoint", srv.URL)
	if code != 0 || !strings.Contains(out, "balancer.interval") || !strings.Contains(out, "applied 5 change(s)") {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	t.Setenv("ZERO502_ALB_ENDPOINT", srv.URL) // the second run finds the double as deploy does
	out, code = runCLI(t, "provision", "--config", cfg)
	if code != 0 || !strings.Contains(out, "no changes") || double.ModifyCalls() != 2 {
		t.Fatalf("second run: exit %d, %d Modify calls in all\n%s", code, double.ModifyCalls(), out)
	}

	calls := double.TotalCalls()
	t.Setenv("ZERO502_BALANCER_INTERVAL", "3s")
	out, code = runCLI(t, "provision", "--config", cfg, "--endpoint", srv.URL)
	if code != 2 || !strings.Contains(out, "balancer.interval: 3s") || double.TotalCalls() != calls {
		t.Fatalf("out of range: exit %d, calls %d→%d\n%s", code, calls, double.TotalCalls(), out)
	}
}

// startELBv2Double serves the ELBv2 API double on loopback and points the AWS SDK's default
// chain at static test credentials only (no profile, no IMDS), so nothing can reach AWS.
func startELBv2Double(t *testing.T, dir string) (*elbv2double.Server, *httptest.Server) {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDZERO502TEST", "AWS_SECRET_ACCESS_KEY": "not-a-secret",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"), "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	double := elbv2double.New(elbv2double.Options{})
	t.Cleanup(double.Close)
	srv := httptest.NewServer(double)
	t.Cleanup(srv.Close)
	return double, srv
}
