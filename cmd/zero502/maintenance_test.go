package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/lbinproc"
)

// zero502 maintenance on|status|off against a real LB: the page with the config's Retry-After,
// the message from the flag, the JSON and the text; bad flags and a balancer without a switch
// exit 2.
func TestMaintenanceCommand(t *testing.T) {
	set := lb.LabSettings("127.0.0.1:0", []string{"127.0.0.1:1"})
	set.Admin = "127.0.0.1:0"
	s := lbinproc.Start(t, set)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "zero502.yaml")
	writeFile(t, cfg, "balancer:\n  admin: "+s.AdminAddr()+"\n  maintenance_retry_after: 45s\n")
	alb := filepath.Join(dir, "alb.yaml")
	writeFile(t, alb, "balancer:\n  kind: alb\n  target_group_arn: arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web/1\n")

	out, code := runCLI(t, "maintenance", "on", "--config", cfg, "--message", "Back soon", "--json")
	var doc struct {
		Instances []struct {
			Message string `json:"message"`
			On      bool   `json:"on"`
		}
		Error string
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Instances) != 1 || !doc.Instances[0].On || doc.Instances[0].Message != "Back soon" || doc.Error != "" {
		t.Fatalf("maintenance on --json: exit %d %q (%v), want 0 and the LB on", code, out, err)
	}
	resp, err := http.Get("http://" + s.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "45" || !strings.Contains(string(page), "Back soon") {
		t.Errorf("the LB after maintenance on: %d Retry-After %q %q, want 503, 45 (balancer.maintenance_retry_after) and the message",
			resp.StatusCode, resp.Header.Get("Retry-After"), page)
	}
	if out, code := runCLI(t, "maintenance", "status", "--config", cfg); code != 0 || !strings.Contains(out, s.AdminAddr()+"  on since") ||
		!strings.Contains(out, "Retry-After 45s") || !strings.Contains(out, ": Back soon") {
		t.Errorf("maintenance status: exit %d %q, want the instance on with its message", code, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"maintenance", "on", "--config", cfg, "--retry-after", "1500ms"}, "retry_after 1.5s: must be whole seconds"},
		{[]string{"maintenance", "on", "--config", cfg, "--message", "a\tb"}, "control character U+0009"},
		{[]string{"maintenance", "on", "--config", alb}, "fixed-response"},
		{[]string{"maintenance", "on", "--config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
	} {
		if out, code := runCLI(t, bad.args...); code != 2 || !strings.Contains(out, bad.want) {
			t.Errorf("zero502 %s: exit %d %q, want 2 and %q", strings.Join(bad.args, " "), code, out, bad.want)
		}
	}
	if !s.Maintenance().On || s.Maintenance().Message != "Back soon" {
		t.Errorf("a refused change changed the LB: %+v", s.Maintenance())
	}
	if out, code := runCLI(t, "maintenance", "off", "--config", cfg); code != 0 || !strings.Contains(out, "  off (1 answered") {
		t.Errorf("maintenance off: exit %d %q, want 0 and off", code, out)
	}
	if s.Maintenance().On {
		t.Error("the LB is still in maintenance after off")
	}
}
