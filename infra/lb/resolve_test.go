package lb

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
)

// flagsGiven is the command line of a test: the flags' values (unset ones hold the lab
// defaults, as pflag's defaults do) and the names of those the user typed.
func flagsGiven(names ...string) func(string) bool {
	return func(flag string) bool { return slices.Contains(names, flag) }
}

func TestResolveConfigModeTakesTheConfigUnlessAFlagIsGiven(t *testing.T) {
	cfg, err := config.LoadBytes(examples.Local, "examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	flags := LabSettings("", nil) // every flag at its default: none of them may win over the config
	flags.Interval, flags.IdleTimeout, flags.Drain, flags.Admin, flags.AdminToken = 800*time.Millisecond, 2*time.Second, 0, "127.0.0.1:0", "tok"
	flags.AcceptProxyFrom = []string{"10.0.0.0/8"}
	flags.Listen = "127.0.0.12:18080" // one config, several LB instances: each its own --listen

	s, err := Resolve(cfg, "ignored:1", []string{"ignored:2"}, flags, flagsGiven())
	if err != nil {
		t.Fatal(err)
	}
	if want := fromConfig(cfg); s.BalancerNumbers != want.BalancerNumbers || s.Drain != want.Drain ||
		s.Admin != want.Admin || !slices.Equal(s.Backends, want.Backends) || s.Listen != want.Listen {
		t.Fatalf("no flag given: %+v\nwant the config's %+v", s, want)
	}

	s, err = Resolve(cfg, "", nil, flags, flagsGiven("health-interval", "drain", "admin", "admin-token", "accept-proxy-from", "listen"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Interval != 800*time.Millisecond || s.Drain != 0 || s.Admin != "127.0.0.1:0" || s.AdminToken != "tok" ||
		!slices.Equal(s.AcceptProxyFrom, []string{"10.0.0.0/8"}) || s.Listen != "127.0.0.12:18080" {
		t.Fatalf("given flags must win: interval %s drain %s admin %q token %q proxy %v listen %q", s.Interval, s.Drain, s.Admin, s.AdminToken, s.AcceptProxyFrom, s.Listen)
	}
	if s.IdleTimeout != cfg.Balancer.IdleTimeout || s.Timeout != cfg.Balancer.Timeout || s.Shutdown != cfg.Drain.Shutdown {
		t.Fatalf("flags not given must keep the config: idle %s timeout %s shutdown %s", s.IdleTimeout, s.Timeout, s.Shutdown)
	}
}

func TestResolveLabModeTakesTheLabDefaultsAndGivenFlags(t *testing.T) {
	flags := LabSettings("", nil)
	flags.HealthyThreshold, flags.MaxConns, flags.AccessLog = 5, 10, true
	s, err := Resolve(nil, "127.0.0.1:8080", []string{"127.0.0.1:9001"}, flags, flagsGiven("healthy-threshold", "access-log"))
	if err != nil {
		t.Fatal(err)
	}
	lab := LabSettings("127.0.0.1:8080", []string{"127.0.0.1:9001"})
	if s.Listen != lab.Listen || !slices.Equal(s.Backends, lab.Backends) || s.HealthyThreshold != 5 || !s.AccessLog ||
		s.MaxConns != lab.MaxConns || s.Interval != lab.Interval || s.Admin != "" {
		t.Fatalf("lab mode: %+v", s)
	}
}

func TestResolveRefusesBadValuesNamingTheFlag(t *testing.T) {
	flags := LabSettings("", nil)
	flags.Timeout = time.Second // not below the lab interval of 500ms
	_, err := Resolve(nil, "127.0.0.1:8080", []string{"127.0.0.1:9001"}, flags, flagsGiven("health-timeout"))
	if err == nil || !strings.Contains(err.Error(), "--health-timeout 1s: must be below --health-interval (500ms)") {
		t.Fatalf("timeout 1s with interval 500ms: %v", err)
	}
	cfg := config.Defaults() // no hosts, no services
	if _, err := Resolve(cfg, "", nil, flags, flagsGiven()); err == nil || !strings.Contains(err.Error(), "no backends") {
		t.Fatalf("config without hosts: %v, want no backends", err)
	}
}
