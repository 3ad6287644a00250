package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/invariants"
)

func TestBoundaryIsTheNearestViolatingValue(t *testing.T) {
	prod := numbers(config.Defaults())
	prod["edge.drain"], prod["edge.dns_ttl"], prod["edge.check_interval"], prod["edge.unhealthy_threshold"] = 90000, 30000, 10000, 3
	prod["#hosts"] = 3
	prodCfg := config.Defaults()
	prodCfg.Edge.Drain = 90 * time.Second
	byID := map[string]relation{}
	for _, r := range applicable(prodCfg) {
		byID[r.id] = r
	}
	// any-service.yaml's case: every service drains at the in-house LB, start-first.
	anyCfg := config.Defaults()
	anyCfg.Services = []config.Service{{Name: "web", Port: 19301, Ports: []int{19301, 19302}, Drain: config.DrainBalancer}}
	anyCfg.Rollout.Strategy = config.StartFirst
	for _, r := range applicable(anyCfg) {
		switch r.id {
		case "I2", "I8", "I9":
			if r.uses("rollout.max_unavailable") {
				byID["I8 any unavailable"] = r
				continue
			}
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
		{"I2 any", "drain.stop_grace", 10000, 5000},             // only the shutdown follows the signal
		{"I8 any", "rollout.batch", 4, 8},                       // start-first: every host at once is fine
		{"I8 any unavailable", "rollout.max_unavailable", 3, 6}, // but not every host out of rotation at once
		{"I9 any", "drain.window", 3000, 1500},                  // the header timeout, 3s
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

// The analysis relations on local.yaml's numbers: 3 hosts, batch 1 after a 1-host canary at
// 5 % for 4s, window 3.5s, header timeout 3s, 400 req/s, min_requests 20.
func TestBoundaryOfTheAnalysisRelations(t *testing.T) {
	c := config.Defaults()
	c.Services = []config.Service{{Name: "web", Port: 19001}}
	c.Hosts = []config.Host{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	c.Rollout.Analysis.Window, c.Rollout.Canary.Duration = 3500*time.Millisecond, 4*time.Second
	c.Rollout.Analysis.ExpectedRate = 400
	vals := numbers(c)
	byID := map[string]relation{}
	for _, r := range applicable(c) {
		byID[r.id] = r
	}
	for _, tc := range []struct {
		id, key         string
		boundary, wrong int64
	}{
		{"I10", "rollout.canary.duration", 3500, 1750},
		{"I10", "rollout.analysis.window", 4000, 8000},
		{"I11", "rollout.analysis.window", 3000, 1500},
		{"I11", "balancer.header_timeout", 3500, 7000},
		{"I12", "rollout.analysis.expected_rate", 99, 49}, // 100/s × 5 % × 4s = 20 holds: one below
		{"I12", "rollout.canary.weight", 1, 0},
		{"I12", "rollout.analysis.min_requests", 81, 162},
		{"I13", "rollout.analysis.expected_rate", 17, 8},
		{"I13", "rollout.analysis.window", 149, 74}, // 400/s × 1/3 × 150ms = 20 holds
		{"I13", "rollout.analysis.min_requests", 467, 934},
	} {
		r, ok := byID[tc.id]
		if !ok {
			t.Fatalf("%s does not apply to local.yaml's numbers", tc.id)
		}
		b, w := r.boundary(tc.key, vals)
		if b != tc.boundary || w != tc.wrong {
			t.Errorf("%s %s: boundary %d, wrong %d; want %d, %d", tc.id, tc.key, b, w, tc.boundary, tc.wrong)
		}
	}
	c.Rollout.Analysis.ExpectedRate, c.Rollout.Canary.Hosts = 0, 0
	for _, r := range applicable(c) {
		if r.id == "I10" || r.id == "I12" || r.id == "I13" {
			t.Errorf("%s applies without a canary or without a rate", r.id)
		}
	}
	c.Balancer.Kind = config.BalancerALB
	for _, r := range applicable(c) {
		if r.id == "I11" {
			t.Error("I11 applies behind an ALB, which publishes no outcomes")
		}
	}
}

func TestNestedAndFlowNumbersAreFound(t *testing.T) {
	data := []byte("rollout:\n  batch: 1\n  analysis: {window: 3500ms, min_requests: 20, expected_rate: 400}\n" +
		"  canary:\n    duration: 4s\n")
	nums, err := timingNumbers("x.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, n := range nums {
		keys = append(keys, n.key+"="+n.raw)
	}
	want := "rollout.batch=1 rollout.analysis.window=3500ms rollout.analysis.min_requests=20 " +
		"rollout.analysis.expected_rate=400 rollout.canary.duration=4s"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("numbers %s, want %s", got, want)
	}
	got, err := replace(data, nums[1], nums[1].format(3000))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(data), "3500ms", "3s", 1); string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A batch written as a share is found as rollout.batch%, mutated as a share, and its I15
// boundary is the largest share that comes to no host (33% of 3 hosts).
func TestABatchShareIsMutatedAsAShare(t *testing.T) {
	data := []byte("rollout:\n  batch: 34%\n")
	nums, err := timingNumbers("x.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(nums) != 1 || nums[0].key != "rollout.batch%" || !nums[0].isShare {
		t.Fatalf("numbers %+v, want one share keyed rollout.batch%%", nums)
	}
	c := config.Defaults()
	c.Hosts = []config.Host{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	c.Rollout.Batch, c.Rollout.BatchShare = 1, 34
	var i15 *relation
	for _, r := range applicable(c) {
		if r.id == "I15" {
			i15 = &r
		}
	}
	if i15 == nil {
		t.Fatal("I15 does not apply to a batch written as a share")
	}
	b, w := i15.boundary("rollout.batch%", numbers(c))
	if b != 33 || w != 16 {
		t.Errorf("boundary %d, wrong %d; want 33 (33%% × 3 < 100%%) and 16", b, w)
	}
	got, err := replace(data, nums[0], nums[0].format(b))
	if err != nil || string(got) != "rollout:\n  batch: 33%\n" {
		t.Errorf("mutated %q (%v), want batch: 33%%", got, err)
	}
	c.Rollout.BatchShare = 0
	for _, r := range applicable(c) {
		if r.id == "I15" {
			t.Error("I15 applies to a batch written as a number")
		}
	}
}

// A duration in a product or sum that breaks its relation as it grows gets an overflow mutant:
// the interval in I1's detection, the TTL in I6's sum; not a lone term, nor one whose growth
// makes the relation hold (the watchdog's patience in I5).
func TestOverflowMutantsAreTheDurationsInProductsOrSumsThatBreak(t *testing.T) {
	c := config.Defaults()
	c.Edge.Drain, c.Edge.DNSTTL, c.Edge.CheckInterval, c.Edge.UnhealthyThreshold = 90*time.Second, 30*time.Second, 10*time.Second, 3
	vals := numbers(c)
	byID := map[string]relation{}
	for _, r := range applicable(c) {
		if _, seen := byID[r.id]; !seen {
			byID[r.id] = r
		}
	}
	for _, tc := range []struct {
		id, key string
		want    bool
	}{
		{"I1", "balancer.interval", true},
		{"I1", "drain.window", false}, // alone on its side, and growing it holds
		{"I2", "drain.window", true},
		{"I3", "balancer.interval", true},
		{"I3", "drain.max_recovery", false},
		{"I4", "balancer.interval", false},
		{"I5", "watchdog.interval", false}, // a longer patience holds
		{"I5", "drain.shutdown", true},
		{"I6", "edge.dns_ttl", true},
		{"I6", "edge.check_interval", true},
		{"I6", "edge.drain", false},
	} {
		if got := byID[tc.id].overflows(tc.key, vals); got != tc.want {
			t.Errorf("%s %s: overflows %v, want %v", tc.id, tc.key, got, tc.want)
		}
	}
	if maxMillis*int64(time.Millisecond) < math.MaxInt64-int64(time.Millisecond) || time.Duration(maxMillis)*time.Millisecond < 0 {
		t.Fatalf("maxMillis %d is not the largest duration in whole milliseconds", maxMillis)
	}
}

// The harness mutates the numbers of every invariant that judges a config: for every balancer
// kind and drain mode, the invariants with a relation that applies are exactly those whose
// verdict is not skipped. One judged without an applicable relation would have no mutant, so a
// wrong number or operator in it would go unnoticed.
func TestEveryInvariantThatJudgesAConfigHasARelation(t *testing.T) {
	for _, kind := range []string{config.BalancerInHouse, config.BalancerALB, config.BalancerEdges, config.BalancerDNS, config.BalancerNone} {
		for _, drain := range []string{config.DrainHandshake, config.DrainBalancer} {
			c := config.Defaults()
			c.Balancer.Kind = kind
			c.Edge.Drain, c.Edge.DNSTTL, c.Edge.CheckInterval, c.Edge.UnhealthyThreshold = 90*time.Second, 30*time.Second, 10*time.Second, 3
			c.Services = []config.Service{{Name: "web", Port: 9000, Drain: drain}}
			c.Hosts = []config.Host{{Name: "a", SSH: "u@a", Address: "10.0.0.1"}, {Name: "b", SSH: "u@b", Address: "10.0.0.2"},
				{Name: "c", SSH: "u@c", Address: "10.0.0.3"}}
			c.Rollout.Analysis.Enabled, c.Rollout.Analysis.ExpectedRate, c.Rollout.Canary.Hosts = true, 400, 1
			c.Rollout.Batch, c.Rollout.BatchShare = 1, 34
			judged := map[string]bool{}
			for _, v := range invariants.Evaluate(c) {
				if v.Status != invariants.Skipped {
					judged[v.ID] = true
				}
			}
			related := map[string]bool{}
			for _, r := range applicable(c) {
				related[r.id] = true
			}
			for _, id := range invariantIDs() {
				if judged[id] != related[id] {
					t.Errorf("balancer.kind %s, drain %s: %s judged %v, but the harness has a relation for it: %v",
						kind, drain, id, judged[id], related[id])
				}
			}
		}
	}
}
