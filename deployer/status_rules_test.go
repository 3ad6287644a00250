package deployer

import (
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/spec"
)

// disagreements holds a service to its published spec by the rules of a deploy's verify.
func TestStatusDisagreementsFollowTheSpec(t *testing.T) {
	t.Parallel()
	want := spec.Service{Name: "web", Version: "v2", Address: "127.0.0.1:9001"}
	ok := instanceStatus{ID: "pid:1", Version: "v2", Address: "127.0.0.1:9001", Healthy: true, Balancer: &balancer.TargetState{State: "healthy", InRotation: true}}
	stopped := want
	stopped.Stopped = true
	for _, c := range []struct {
		name   string
		want   spec.Service
		inSpec bool
		insts  []instanceStatus
		says   []string // empty: agrees
	}{
		{"one healthy instance in rotation", want, true, []instanceStatus{ok}, nil},
		{"nothing runs", want, true, nil, []string{"the spec asks for v2, nothing runs"}},
		{"old version", want, true, []instanceStatus{{ID: "pid:1", Version: "v1", Address: ok.Address, Healthy: true}}, []string{"pid:1 runs v1, the spec asks for v2"}},
		{"other port", want, true, []instanceStatus{{ID: "pid:1", Version: "v2", Address: "127.0.0.1:9002", Healthy: true}}, []string{"answers on 127.0.0.1:9002, the spec publishes 127.0.0.1:9001"}},
		{"two instances", want, true, []instanceStatus{ok, ok}, []string{"2 instances run, the spec asks for one"}},
		{"unhealthy", want, true, []instanceStatus{{ID: "pid:1", Version: "v2", HealthError: "status 503"}}, []string{"pid:1 unhealthy: status 503"}},
		{"out of rotation", want, true, []instanceStatus{{ID: "pid:1", Version: "v2", Healthy: true, Balancer: &balancer.TargetState{State: "draining"}}}, []string{"not in rotation at the balancer (draining)"}},
		{"its config", want, true, []instanceStatus{{ID: "pid:1", Version: "v2", Address: ok.Address, Healthy: true, Digest: want.Digest()}}, nil},
		{"another config", want, true, []instanceStatus{{ID: "pid:1", Version: "v2", Address: ok.Address, Healthy: true, Digest: "0123456789abcdef"}}, []string{"pid:1 runs v2 from another config (digest 0123456789abcdef)"}},
		{"stopped, nothing runs", stopped, true, nil, nil},
		{"stopped, but it runs", stopped, true, []instanceStatus{ok}, []string{"stopped by the spec, but 1 instance(s) run"}},
		{"no spec, something runs", spec.Service{}, false, []instanceStatus{ok}, []string{"no published spec asks for this service"}},
	} {
		got := strings.Join(disagreements(c.want, c.inSpec, c.insts), "; ")
		if len(c.says) == 0 && got != "" {
			t.Errorf("%s: disagrees (%s), want it to agree", c.name, got)
		}
		for _, s := range c.says {
			if !strings.Contains(got, s) {
				t.Errorf("%s: %q lacks %q", c.name, got, s)
			}
		}
	}
}
