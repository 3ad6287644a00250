package main

import (
	"testing"
	"time"

	"github.com/zero502/zero502/infra"
)

func TestBoundaryIsTheNearestViolatingValue(t *testing.T) {
	prod := numbers(infra.Defaults())
	prod["edge.drain"], prod["edge.dns_ttl"], prod["edge.check_interval"], prod["edge.unhealthy_threshold"] = 90000, 30000, 10000, 3
	prod["#hosts"] = 3
	prodCfg := infra.Defaults()
	prodCfg.Edge.Drain = 90 * time.Second
	byID := map[string]relation{}
	for _, r := range applicable(prodCfg) {
		byID[r.id] = r
	}
	// any-service.yaml's case: every service drains at the in-house LB, start-first.
	anyCfg := infra.Defaults()
	anyCfg.Services = []infra.Service{{Name: "web", Port: 19301, Ports: []int{19301, 19302}, Drain: infra.DrainBalancer}}
	anyCfg.Rollout.Strategy = infra.StartFirst
	for _, r := range applicable(anyCfg) {
		switch r.id {
		case "I2", "I8", "I9":
			byID[r.id+" any"] = r
		}
	}
	if _, ok := byID["I9"]; ok {
		t.Error("I9 applies to a config without drain: balancer")
	}
	if _, ok := byID["I6"]; !ok {
		t.Error("I6 does not apply to a config with an edge")
	}
	for _, tc := range []struct {
		id, key         string
		boundary, wrong int64
	}{
		{"I2 any", "drain.stop_grace", 10000, 5000}, // only the shutdown follows the signal
		{"I8 any", "rollout.batch", 4, 8},           // start-first: every host at once is fine
		{"I9 any", "drain.window", 3000, 1500},      // the header timeout, 3s
		{"I9 any", "balancer.header_timeout", 15000, 30000},
		{"I1", "drain.window", 10000, 5000}, // 5s against 5s × 2: the source's bug
		{"I1", "balancer.interval", 7500, 15000},
		{"I1", "balancer.unhealthy_threshold", 3, 6},
		{"I2", "drain.stop_grace", 25000, 12500},
		{"I3", "drain.max_recovery", 9999, 4999}, // ≤ holds at equality: one unit past it
		{"I3", "balancer.healthy_threshold", 7, 14},
		{"I5", "watchdog.heal_after", 1, 0}, // heal on the first failed check: the source's watchdog
		{"I6", "edge.unhealthy_threshold", 6, 12},
		{"I8", "rollout.batch", 3, 6},
	} {
		b, w := byID[tc.id].boundary(tc.key, prod)
		if b != tc.boundary || w != tc.wrong {
			t.Errorf("%s %s: boundary %d, wrong %d; want %d, %d", tc.id, tc.key, b, w, tc.boundary, tc.wrong)
		}
	}
}

func TestReplaceChangesOnlyTheNumber(t *testing.T) {
	data := []byte("drain:\n  window: 15s # the source's\n  shutdown: 10s\n")
	nums, err := timingNumbers("x.yaml", data)
	if err != nil || len(nums) != 2 {
		t.Fatalf("timingNumbers = %v, %v", nums, err)
	}
	got, err := replace(data, nums[0], nums[0].format(10000))
	if err != nil {
		t.Fatal(err)
	}
	if want := "drain:\n  window: 10s # the source's\n  shutdown: 10s\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
