package deployer

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// Start-first over ssh: each deploy moves a host's service to its other port (and takes the old
// target out at the balancer). The deployer has no runtime of a host over ssh, so it must check
// the host where its look (and its step's report) says the service answers, not at its first
// port: v1, v2 (each host on its second port), v3 (back on the first) all deploy, each accepted
// by preflight and re-verified between batches.
func TestStartFirstOverSSHChecksTheHostsCurrentPort(t *testing.T) {
	t.Parallel()
	// max_unavailable 1: between batches, invariant I8 counts the hosts serving, host-a (done)
	// at the port it moved to.
	for _, unavailable := range []int{0, 1} {
		t.Run(fmt.Sprintf("max_unavailable %d", unavailable), func(t *testing.T) {
			t.Parallel()
			startFirstOverSSH(t, unavailable)
		})
	}
}

func startFirstOverSSH(t *testing.T, maxUnavailable int) {
	s := startSSHD(t)
	f := newFleet(t, 2)
	cfg := f.load(f.config("startfirst.yaml", defaultValues()))
	cfg.Rollout.Strategy, cfg.Rollout.Batch, cfg.Rollout.MaxUnavailable = config.StartFirst, 1, maxUnavailable
	cfg.Services[0].Ports = []int{f.base, f.gatewayBase()}
	for i := range cfg.Hosts {
		cfg.Hosts[i].SSH, cfg.Hosts[i].Address = s.target(), "127.0.0.1"
	}
	path := f.write("startfirst.yaml", cfg)
	cfg = f.load(path)
	f.startLB(path)
	ctx := context.Background()

	wantPort := []int{0, 1, 0} // index into services[0].ports after v1, v2, v3
	for n, version := range []string{"v1", "v2", "v3"} {
		var ev eventLog
		rep, err := f.deployer(cfg, &ev, Options{RemoteBinary: bin}).Deploy(ctx, version)
		if err != nil {
			t.Fatalf("deploy %s: %v\nevents:\n%s", version, err, &ev)
		}
		log := ev.String()
		if strings.Contains(log, " "+stepRefused+" ") || !strings.Contains(log, "every running target healthy") {
			t.Errorf("deploy %s: preflight did not accept:\n%s", version, log)
		}
		for i, h := range rep.Hosts {
			if h.Outcome != report.OutcomeDeployed || h.Running != version {
				t.Errorf("deploy %s: %s %s, runs %q; want deployed %s\nevents:\n%s", version, h.Host, h.Outcome, h.Running, version, log)
			}
			want := cfg.Hosts[i].ServiceAddrs(cfg.Services[0])[wantPort[n]]
			in, ok := f.instances(h.Host)["web"]
			if !ok || in.Version != version || in.Address != want {
				t.Errorf("after %s, %s runs %+v; want %s on %s", version, h.Host, in, version, want)
			}
		}
	}
}
