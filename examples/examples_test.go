package examples_test

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
)

// Every shipped config loads and names a whole fleet.
func TestShippedConfigsLoad(t *testing.T) {
	names, err := fs.Glob(examples.Files, "*.yaml")
	if err != nil || len(names) < 3 {
		t.Fatalf("shipped configs %v, %v; want at least local, production and any-service", names, err)
	}
	for _, n := range names {
		data, _ := examples.Files.ReadFile(n)
		c, err := config.LoadBytes(data, "examples/"+n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if err := c.RequireFleet(); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
}

// any-service.yaml deploys a server that knows nothing of zero502: start-first on two ports per
// host, drained at the balancer, checked and verified on the file it serves, on ports that do
// not collide with local.yaml's so both can run on one machine.
func TestAnyServiceIsStartFirstBalancerDrainedBesideLocal(t *testing.T) {
	data, _ := examples.Files.ReadFile("any-service.yaml")
	c, err := config.LoadBytes(data, "examples/any-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	local, err := config.LoadBytes(examples.Local, "examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svc, ok := c.BalancedService()
	if !ok || c.Rollout.Strategy != config.StartFirst || svc.Drain != config.DrainBalancer || len(svc.Ports) != 2 ||
		svc.Health.Path != "/version.txt" || svc.Verify.VersionPath != "/version.txt" || c.Balancer.HealthPath != "/version.txt" {
		t.Fatalf("any-service.yaml: strategy %s, service %+v; want start-first, drain balancer, two ports, /version.txt",
			c.Rollout.Strategy, svc)
	}
	if !strings.Contains(strings.Join(svc.Command, " "), "runpy.run_module('http.server', run_name='__main__', alter_sys=True)\" {port}") {
		t.Errorf("command %q does not run python3's http.server on {port}", svc.Command)
	}
	targets := c.Targets()
	if len(targets) != 2*len(c.Hosts) || len(c.Hosts) != 3 {
		t.Fatalf("targets %v: want both ports of each of 3 hosts", targets)
	}
	taken := append(local.Targets(), local.Balancer.Listen, local.Balancer.Admin)
	for _, addr := range append(targets, c.Balancer.Listen, c.Balancer.Admin) {
		if slices.Contains(taken, addr) {
			t.Errorf("%s is also local.yaml's", addr)
		}
		taken = append(taken, addr)
	}
}
