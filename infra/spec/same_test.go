package spec

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

// The same --version with a changed env, command or ports is rolled out (README, "the same
// --version with a changed env, command or ports"): Same compares the whole spec, not the
// version. Each change is made where an operator makes it, in the config, and rendered at the
// same version, one field at a time; the spec published and read back from the unchanged config
// stays the same.
func TestSameSeesAChangedEnvCommandOrPortsUnderTheSameVersion(t *testing.T) {
	t.Parallel()
	load := func(t *testing.T) *config.Config {
		t.Helper()
		cfg, err := config.Load(filepath.Join("..", "..", "examples", "local.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		web := &cfg.Services[0]
		web.Env = map[string]string{"FEATURE_X": "off"}
		// Without --port {port}: a changed port must differ by the port itself, not by the
		// command it is rendered into (a docker service, or one told its port otherwise).
		i := slices.Index(web.Command, "--port")
		web.Command = slices.Delete(slices.Clone(web.Command), i, i+2)
		return cfg
	}
	cfg := load(t)
	h := cfg.Hosts[1] // a port offset, as a real host may have
	p := Path(t.TempDir())
	if err := Publish(p, Render(cfg, h, "v1", "/bin/zero502")); err != nil {
		t.Fatal(err)
	}
	published, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if !Same(published, Render(load(t), h, "v1", "/bin/zero502")) {
		t.Fatal("the spec published and read back is not the same as the unchanged config rendered again: every deploy would redeploy")
	}
	for _, c := range []struct {
		name   string
		change func(*config.Service)
	}{
		{"a changed env value", func(s *config.Service) { s.Env["FEATURE_X"] = "on" }},
		{"an env variable added", func(s *config.Service) { s.Env["LOG_LEVEL"] = "debug" }},
		{"the env removed", func(s *config.Service) { s.Env = nil }},
		{"a changed command argument", func(s *config.Service) {
			s.Command = slices.Clone(s.Command)
			s.Command[len(s.Command)-1] = "30s" // --idle-timeout {idle_timeout} → 30s
		}},
		{"a command flag added", func(s *config.Service) { s.Command = append(slices.Clone(s.Command), "--fail-every", "4") }},
		{"a changed program", func(s *config.Service) {
			s.Command = slices.Clone(s.Command)
			s.Command[0] = "/usr/local/bin/web"
		}},
		{"a changed port", func(s *config.Service) { s.Port++ }},
		{"start-first ports", func(s *config.Service) { s.Ports = []int{s.Port, s.Port + 1} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			changed := load(t)
			c.change(&changed.Services[0])
			want := Render(changed, h, "v1", "/bin/zero502")
			if Same(published, want) {
				t.Errorf("%s under the same version v1 and Same says the spec is the same: the change would never roll out\npublished %+v\nwanted    %+v",
					c.name, published.Services[0], want.Services[0])
			}
		})
	}
	t.Run("the ports of a start-first service changed", func(t *testing.T) {
		before, after := load(t), load(t)
		before.Services[0].Ports = []int{before.Services[0].Port, before.Services[0].Port + 1}
		after.Services[0].Ports = []int{before.Services[0].Port, before.Services[0].Port + 2}
		// The instance is on the first port in both: only the other port differs.
		if Same(Render(before, h, "v1", "/bin/zero502"), Render(after, h, "v1", "/bin/zero502")) {
			t.Error("services[].ports changed from [A, A+1] to [A, A+2] under the same version and Same says the spec is the same")
		}
	})
}
