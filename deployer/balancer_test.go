package deployer

import (
	"testing"
	"time"

	"github.com/zero502/zero502/infra"
)

func TestCompareSettingsNamesEachDriftedField(t *testing.T) {
	cfg := infra.Defaults().Balancer
	live := Settings{Listen: cfg.Listen, HealthPath: "/healthz", Interval: 10 * time.Second, Timeout: cfg.Timeout,
		UnhealthyThreshold: 3, HealthyThreshold: cfg.HealthyThreshold, MaxHeaderBytes: cfg.MaxHeaderBytes}
	got := CompareSettings(cfg, live)
	want := []Drift{
		{Field: "balancer.health_path", Config: "/health", Live: "/healthz"},
		{Field: "balancer.interval", Config: "5s", Live: "10s"},
		{Field: "balancer.unhealthy_threshold", Config: "2", Live: "3"},
	}
	if len(got) != len(want) {
		t.Fatalf("drift %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("drift[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// A field the balancer does not report (zero) is not drift; equal durations written
	// differently are equal.
	if d := CompareSettings(cfg, Settings{Interval: 5000 * time.Millisecond}); len(d) != 0 {
		t.Errorf("5000ms against 5s: %v, want no drift", d)
	}
	applied := ApplySettings(cfg, live)
	if applied.Interval != 10*time.Second || applied.UnhealthyThreshold != 3 || applied.IdleTimeout != cfg.IdleTimeout {
		t.Errorf("ApplySettings: %+v", applied)
	}
}

func TestSummarizeNamesOneVersionOrEachService(t *testing.T) {
	for _, tc := range []struct {
		versions map[string]string
		services int
		want     string
	}{
		{map[string]string{}, 2, ""},
		{map[string]string{"web": "v2", "worker": "v2"}, 2, "v2"},
		{map[string]string{"web": "v2"}, 2, "web=v2"},
		{map[string]string{"web": "v2", "worker": "v1"}, 2, "web=v2,worker=v1"},
	} {
		if got := summarize(tc.versions, tc.services); got != tc.want {
			t.Errorf("summarize(%v, %d) = %q, want %q", tc.versions, tc.services, got, tc.want)
		}
	}
}
