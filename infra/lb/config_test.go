package lb

import (
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
)

func TestFromConfigTakesEverythingFromTheInfraConfig(t *testing.T) {
	cfg, err := config.LoadBytes(examples.Local, "examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := fromConfig(cfg)
	if err := s.Validate(); err != nil {
		t.Fatalf("local.yaml gives invalid LB settings: %v", err)
	}
	want := config.BalancerNumbers{HealthPath: "/health",
		Interval: 250 * time.Millisecond, Timeout: 100 * time.Millisecond, UnhealthyThreshold: 2, HealthyThreshold: 2,
		IdleTimeout: 5 * time.Second, ConnectTimeout: time.Second, HeaderTimeout: 3 * time.Second, MaxHeaderBytes: 65536,
		DeregistrationDelay: 30 * time.Second}
	if s.Listen != "127.0.0.1:18080" || s.Admin != "127.0.0.1:18081" || s.BalancerNumbers != want ||
		s.Drain != 1500*time.Millisecond || s.Shutdown != time.Second {
		t.Fatalf("settings from local.yaml:\n got %+v\nwant listen 127.0.0.1:18080, admin 127.0.0.1:18081, drain 1.5s, shutdown 1s, %+v", s, want)
	}
	if len(s.Backends) != 3 || s.Backends[0] != "127.0.0.1:19001" || s.Backends[2] != "127.0.0.1:19201" {
		t.Fatalf("backends: %v, want the web service on the three hosts", s.Backends)
	}
}

func TestLabDefaultsMeetTheLabTiming(t *testing.T) {
	s := LabSettings("127.0.0.1:8080", []string{"127.0.0.1:9001"})
	// worst case out: a check just missed, then unhealthy_threshold checks each running into its timeout
	out := s.Interval + time.Duration(s.UnhealthyThreshold)*(s.Interval+s.Timeout)
	back := s.Interval + time.Duration(s.HealthyThreshold)*s.Interval
	if s.Interval > time.Second || out >= 4*time.Second || back >= 5*time.Second ||
		s.ConnectTimeout != time.Second || s.HeaderTimeout != 3*time.Second {
		t.Fatalf("lab defaults: interval %s, out within %s (lab: 4s), back within %s (lab: 5s), connect %s, header %s",
			s.Interval, out, back, s.ConnectTimeout, s.HeaderTimeout)
	}
}

func TestDefaultMaxConnsLeavesDescriptorsForBackends(t *testing.T) {
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{{1024, 384}, {1 << 20, (1<<20 - 256) / 2}, {256, 64}, {1 << 40, 1 << 20}} {
		if got := maxConnsFor(tc.nofile); got != tc.want {
			t.Errorf("RLIMIT_NOFILE %d: max_conns %d, want %d", tc.nofile, got, tc.want)
		}
	}
	if got := LabSettings("127.0.0.1:0", nil).MaxConns; got != defaultMaxConns() || got < 64 {
		t.Errorf("lab default max_conns %d, want DefaultMaxConns() %d", got, defaultMaxConns())
	}
}

// A backend given twice (zero502 lb 8080 a:1 a:1) is refused, naming it, as the edge refuses an
// origin given twice: the admin API finds a backend by its address, so a drain would take one
// copy out and leave the other in rotation. A threshold past the config's bound
// (config.MaxThreshold) is refused from a flag as from balancer.*_threshold.
func TestABackendGivenTwiceAndAThresholdPastTheBoundAreRefused(t *testing.T) {
	s := LabSettings("127.0.0.1:8080", []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9001"})
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `backend "127.0.0.1:9001": given twice`) {
		t.Errorf("a backend given twice: %v, want it refused naming it", err)
	}
	for flag, edit := range map[string]func(*Settings){
		"--unhealthy-threshold 1001": func(s *Settings) { s.UnhealthyThreshold = config.MaxThreshold + 1 },
		"--healthy-threshold 1001":   func(s *Settings) { s.HealthyThreshold = config.MaxThreshold + 1 },
	} {
		s := LabSettings("127.0.0.1:8080", []string{"127.0.0.1:9001"})
		edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), flag+": must be at most 1000") {
			t.Errorf("%s: %v, want it refused", flag, err)
		}
	}
}
