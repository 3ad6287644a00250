package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The numbers sit at balancer.* in the file and in ZERO502_BALANCER_*, though they are their
// own type in Go: a misspelt one is still refused naming the closest key.
func TestBalancerNumbersAreBalancerKeys(t *testing.T) {
	t.Setenv("ZERO502_BALANCER_UNHEALTHY_THRESHOLD", "3")
	c, err := Load(writeConfig(t, "balancer:\n  interval: 7s\n  slow_start: 30s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Balancer.Interval != 7*time.Second || c.Balancer.SlowStart != 30*time.Second ||
		c.Balancer.UnhealthyThreshold != 3 || c.Balancer.Detection() != 21*time.Second {
		t.Fatalf("balancer numbers %+v, want interval 7s, slow_start 30s, unhealthy_threshold 3", c.Balancer.BalancerNumbers)
	}
	_, err = Load(writeConfig(t, "balancer:\n  intervall: 7s\n"))
	if err == nil || !strings.Contains(err.Error(), `"balancer.interval"`) {
		t.Fatalf("balancer.intervall: %v, want refused naming balancer.interval", err)
	}
}

// A config another zero502 sent whole (a host's step reads the deployer's) is taken as sent:
// this machine's ZERO502_* variables neither change it nor, misspelt, refuse it; LoadBytes, a
// config of this machine's, takes them.
func TestASentConfigIsNotChangedByThisMachinesEnvironment(t *testing.T) {
	t.Setenv("ZERO502_BALANCER_UNHEALTHY_THRESHOLD", "9")
	t.Setenv("ZERO502_DRIAN_WINDOW", "20s")
	data := []byte("balancer:\n  unhealthy_threshold: 3\n")
	c, err := LoadSent(data, "from stdin")
	if err != nil || c.Balancer.UnhealthyThreshold != 3 {
		t.Fatalf("LoadSent: %v, unhealthy_threshold %v; want the 3 it was sent", err, c)
	}
	if _, err := LoadBytes(data, "from stdin"); err == nil || !strings.Contains(err.Error(), "ZERO502_DRIAN_WINDOW") {
		t.Fatalf("LoadBytes: %v; want this machine's environment read (and its misspelt variable refused)", err)
	}
}

func TestBalancerNumberKeysAreTheConfigKeys(t *testing.T) {
	want := []string{"health_path", "interval", "timeout", "unhealthy_threshold", "healthy_threshold", "idle_timeout",
		"connect_timeout", "header_timeout", "max_header_bytes", "deregistration_delay", "slow_start"}
	if got := BalancerNumberKeys(); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

func TestBalancerNumberTextsRoundTrip(t *testing.T) {
	n := Defaults().Balancer.BalancerNumbers
	var back BalancerNumbers
	for _, key := range BalancerNumberKeys() {
		v, ok := n.Text(key)
		if !ok {
			t.Fatalf("Text(%q): not a number", key)
		}
		if err := back.SetText(key, v); err != nil {
			t.Fatalf("SetText(%q, %#v): %v", key, v, err)
		}
	}
	if back != n {
		t.Fatalf("round trip %+v, want %+v", back, n)
	}
	if v, _ := n.Text("interval"); v != "5s" {
		t.Errorf("interval written %#v, want \"5s\"", v)
	}
	if v, _ := n.Text("max_header_bytes"); v != 65536 {
		t.Errorf("max_header_bytes written %#v, want 65536", v)
	}
	if err := back.SetText("healthy_threshold", 3.0); err != nil || back.HealthyThreshold != 3 {
		t.Errorf("a JSON number 3 for healthy_threshold: %v, %d", err, back.HealthyThreshold)
	}
	for _, tc := range []struct {
		key   string
		value any
		wants string
	}{
		{"interval", 5.0, "balancer.interval 5: not a duration"},
		{"interval", "5", `balancer.interval "5": not a duration`},
		{"healthy_threshold", "two", `balancer.healthy_threshold "two": not a whole number`},
		{"healthy_threshold", 2.5, "balancer.healthy_threshold 2.5: not a whole number"},
		{"health_path", 1.0, "balancer.health_path 1: not a string"},
		{"listen", ":80", "balancer.listen: not one of the balancer's numbers"},
	} {
		if err := back.SetText(tc.key, tc.value); err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("SetText(%q, %#v): %v, want %q", tc.key, tc.value, err, tc.wants)
		}
	}
}

func TestDriftComparesOnlyReportedNumbers(t *testing.T) {
	cfg := Defaults().Balancer.BalancerNumbers
	live := cfg
	live.HealthPath, live.Interval, live.UnhealthyThreshold = "/healthz", 10*time.Second, 3
	live.IdleTimeout, live.SlowStart = 0, 45*time.Second // idle not reported; slow start drifted
	got := cfg.Drift(live, []string{"health_path", "interval", "timeout", "unhealthy_threshold", "slow_start"})
	want := []Drift{
		{Field: "balancer.health_path", Config: "/health", Live: "/healthz"},
		{Field: "balancer.interval", Config: "5s", Live: "10s"},
		{Field: "balancer.unhealthy_threshold", Config: "2", Live: "3"},
		{Field: "balancer.slow_start", Config: "0s", Live: "45s"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("drift\n%v\nwant\n%v", got, want)
	}
	// Equal durations written differently are equal; a zero a balancer reports is a value.
	live = cfg
	live.Interval = 5000 * time.Millisecond
	if d := cfg.Drift(live, BalancerNumberKeys()); len(d) != 0 {
		t.Errorf("5000ms against 5s: %v, want no drift", d)
	}
	live.DeregistrationDelay = 0
	if d := cfg.Drift(live, []string{"deregistration_delay"}); len(d) != 1 || d[0].Live != "0s" {
		t.Errorf("a reported deregistration delay of 0s against 30s: %v, want drift", d)
	}
}

func TestOverlayTakesOnlyReportedNumbers(t *testing.T) {
	cfg := Defaults().Balancer.BalancerNumbers
	live := BalancerNumbers{Interval: 10 * time.Second, UnhealthyThreshold: 3, SlowStart: 0, IdleTimeout: 0}
	got := cfg.Overlay(live, []string{"interval", "unhealthy_threshold", "slow_start", "no_such_key"})
	want := cfg
	want.Interval, want.UnhealthyThreshold, want.SlowStart = 10*time.Second, 3, 0
	if got != want {
		t.Fatalf("overlay %+v, want %+v", got, want)
	}
	if got.Detection() != 30*time.Second {
		t.Errorf("detection on the live numbers %s, want 30s", got.Detection())
	}
}
