package invariants

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
)

// configsEnv names config files (comma-separated) that replace the shipped set in every test:
// the mutation harness hands its config mutants to the tests this way.
const configsEnv = "ZERO502_INVARIANT_CONFIGS"

type namedConfig struct {
	name string
	cfg  *config.Config
}

// shippedConfigs loads every shipped config (examples/*.yaml and the embedded defaults), or the
// files named by ZERO502_INVARIANT_CONFIGS instead; replaced says which.
func shippedConfigs(t *testing.T) (cfgs []namedConfig, replaced bool) {
	t.Helper()
	if list := os.Getenv(configsEnv); list != "" {
		for _, path := range strings.Split(list, ",") {
			c, err := config.Load(strings.TrimSpace(path))
			if err != nil {
				t.Fatalf("%s: %v", configsEnv, err)
			}
			cfgs = append(cfgs, namedConfig{path, c})
		}
		return cfgs, true
	}
	names, err := fs.Glob(examples.Files, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shipped configs embedded in package examples (%v)", err)
	}
	for _, n := range names {
		data, err := examples.Files.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		c, err := config.LoadBytes(data, "examples/"+n)
		if err != nil {
			t.Fatalf("shipped config does not load: %v", err)
		}
		cfgs = append(cfgs, namedConfig{"examples/" + n, c})
	}
	return append(cfgs, namedConfig{"embedded defaults", config.Defaults()}), false
}

// requireShippedHold fails when invariant id is violated by any shipped config, or warns in one
// (a shipped config is an example to copy: it carries no warning). On the shipped set (not a
// replacement) it also requires that id holds in at least one of them, so a shipped config
// exercises every invariant rather than skipping it everywhere.
func requireShippedHold(t *testing.T, id string) {
	t.Helper()
	t.Run("shipped configs", func(t *testing.T) {
		cfgs, replaced := shippedConfigs(t)
		held := 0
		for _, nc := range cfgs {
			v := verdictOf(t, nc.cfg, id)
			switch v.Status {
			case Violated:
				t.Errorf("%s violates %s: %s", nc.name, id, v.Sentence)
			case Warned:
				t.Errorf("%s warns on %s: %s", nc.name, id, v.Sentence)
			case Holds:
				held++
			}
		}
		if !replaced && held == 0 {
			t.Errorf("%s holds in none of the shipped configs: every one skips it", id)
		}
	})
}

// verdictOf is invariant id's verdict on c.
func verdictOf(t *testing.T, c *config.Config, id string) Verdict {
	t.Helper()
	for _, v := range Evaluate(c) {
		if v.ID == id {
			return v
		}
	}
	t.Fatalf("Evaluate returned no verdict for %s", id)
	return Verdict{}
}

// expect asserts invariant id's verdict on c, and that Check and Warnings agree: a violation
// (from Check) or a warning (from Warnings) with the numbers and a sentence naming the keys
// exactly when the verdict is violated or warned, never both.
func expect(t *testing.T, c *config.Config, id string, want Status) Verdict {
	t.Helper()
	v := verdictOf(t, c, id)
	if v.Status != want {
		t.Fatalf("%s: got %s, want %s (%s)", id, v.Status, want, v.Sentence)
	}
	for _, list := range []struct {
		name   string
		status Status
		got    []Violation
	}{{"Check", Violated, Check(c)}, {"Warnings", Warned, Warnings(c)}} {
		var found *Violation
		for _, viol := range list.got {
			if viol.ID == id {
				found = &viol
			}
		}
		switch {
		case want == list.status && found == nil:
			t.Fatalf("%s is %s but %s does not return it", id, want, list.name)
		case want != list.status && found != nil:
			t.Fatalf("%s %s but %s returns it: %s", id, want, list.name, found.Sentence)
		case found != nil:
			if len(found.Numbers) == 0 || !strings.Contains(found.Sentence, found.Numbers[0].Name) {
				t.Fatalf("%s: %s entry lacks numbers or does not name %v: %q", id, list.name, found.Numbers, found.Sentence)
			}
		}
	}
	return v
}

// judged is the defaults with a balanced service on n hosts: a config the analysis judges (the
// in-house LB, rollout.analysis on), for the analysis invariants I10–I13.
func judged(n int) *config.Config {
	c := withHosts(config.Defaults(), n)
	c.Services = []config.Service{{Name: "web", Port: 8000}}
	return c
}

// withHosts gives c n hosts.
func withHosts(c *config.Config, n int) *config.Config {
	c.Hosts = nil
	for i := range n {
		c.Hosts = append(c.Hosts, config.Host{Name: "h" + string(rune('a'+i)), Address: "127.0.0.1"})
	}
	return c
}
