package demo

import (
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

// The traffic demo runs the shipped tiers moved into its temp dir and onto free ports: nothing of
// the shipped paths or ports is left, and each tier's file loads back as the tier runs it.
func TestTrafficLayoutMovesTheShippedTiers(t *testing.T) {
	c, err := newChain()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(c.dir)
	for _, tr := range []*tier{c.apps, c.lbs, c.edges} {
		data, err := os.ReadFile(tr.path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, shipped := range []string{shippedDir + "/", ":18080", ":18081", ":18443", ":18581", "19001"} {
			if strings.Contains(text, shipped) {
				t.Errorf("%s still holds the shipped %q:\n%s", tr.path, shipped, text)
			}
		}
		if !strings.HasPrefix(tr.path, c.dir) {
			t.Errorf("tier %s is written outside the run's dir: %s", tr.name, tr.path)
		}
		again, err := config.Load(tr.path)
		if err != nil {
			t.Fatalf("tier %s does not load back: %v", tr.name, err)
		}
		for _, h := range again.Hosts {
			if !strings.HasPrefix(h.StateDir, c.dir) {
				t.Errorf("tier %s host %s: state dir %s outside the run's dir", tr.name, h.Name, h.StateDir)
			}
		}
	}
	if got := c.lbs.cfg.Services[0].Command; !strings.Contains(strings.Join(got, " "), c.apps.path) {
		t.Errorf("LB instance command %q does not read the apps tier's file %s", got, c.apps.path)
	}
	if c.edges.cfg.Edge.Origins[0] != c.lbs.cfg.Targets()[0] || !strings.HasPrefix(c.zone, c.dir) {
		t.Errorf("edges' upstreams %v, want the LB instances %v; zone %s", c.edges.cfg.Edge.Origins, c.lbs.cfg.Targets(), c.zone)
	}
}
