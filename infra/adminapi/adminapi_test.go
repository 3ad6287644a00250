package adminapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestSettingsJSONIsTheConfigsKeysWithDurationStrings(t *testing.T) {
	s := Settings{Listen: "127.0.0.1:18080", BalancerNumbers: config.BalancerNumbers{
		HealthPath: "/health", Interval: 250 * time.Millisecond, Timeout: 100 * time.Millisecond,
		UnhealthyThreshold: 2, HealthyThreshold: 3, IdleTimeout: 5 * time.Second, ConnectTimeout: time.Second,
		HeaderTimeout: 3 * time.Second, MaxHeaderBytes: 65536,
		DeregistrationDelay: 30 * time.Second, SlowStart: time.Minute, // the ALB's: not the LB's to report
	}}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"listen":"127.0.0.1:18080","health_path":"/health","interval":"250ms","timeout":"100ms",` +
		`"unhealthy_threshold":2,"healthy_threshold":3,"idle_timeout":"5s","connect_timeout":"1s",` +
		`"header_timeout":"3s","max_header_bytes":65536}`
	if string(data) != want {
		t.Fatalf("GET /admin/settings body\n %s\nwant\n %s", data, want)
	}

	var back Settings
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	wantBack := s
	wantBack.DeregistrationDelay, wantBack.SlowStart = 0, 0
	wantBack.Reported = InHouseNumbers()
	if back.Listen != wantBack.Listen || back.BalancerNumbers != wantBack.BalancerNumbers || !slices.Equal(back.Reported, wantBack.Reported) {
		t.Fatalf("read back %+v\nwant %+v", back, wantBack)
	}
}

func TestSettingsReadOnlyWhatTheLBReports(t *testing.T) {
	var s Settings
	if err := json.Unmarshal([]byte(`{"listen":"127.0.0.1:1","interval":"1s","healthy_threshold":4,"future_knob":"x"}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Interval != time.Second || s.HealthyThreshold != 4 || !slices.Equal(s.Reported, []string{"interval", "healthy_threshold"}) {
		t.Fatalf("partial settings read as %+v", s)
	}
	for _, tc := range []struct{ body, wants string }{
		{`{"interval":5000000000}`, "admin settings: balancer.interval 5e+09: not a duration"},
		{`{"healthy_threshold":"2"}`, `admin settings: balancer.healthy_threshold "2": not a whole number`},
		{`{"listen":8080}`, "admin settings listen 8080: not a string"},
	} {
		if err := json.Unmarshal([]byte(tc.body), &s); err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.wants)
		}
	}
}
