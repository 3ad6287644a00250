package watchdog_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/watchdog"
)

// tickEachConfig is three hosts of a process-runtime config whose one service cannot start:
// calm has no published spec (nothing to watch), broken a corrupt one (it cannot be checked),
// sick a published spec, so its first failed check heals (heal_after 1) and the heal fails.
func tickEachConfig(t *testing.T) *config.Config {
	t.Helper()
	root := t.TempDir()
	yaml := fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {heal_after: 1, state_dir: %[1]s}
services:
  - {name: worker, command: [sh, -c, "echo cannot start >&2; exit 3"]}
hosts:
  - {name: calm, state_dir: %[1]s/calm}
  - {name: broken, state_dir: %[1]s/broken}
  - {name: sick, state_dir: %[1]s/sick}
`, root)
	cfg, err := config.LoadBytes([]byte(yaml), "test config")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range cfg.Hosts {
		if err := os.MkdirAll(cfg.HostStateDir(h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	broken, _ := cfg.Host("broken")
	if err := os.WriteFile(spec.Path(cfg.HostStateDir(broken)), []byte("{half a spec"), 0o644); err != nil {
		t.Fatal(err)
	}
	sick, _ := cfg.Host("sick")
	if err := spec.Publish(spec.Path(cfg.HostStateDir(sick)), spec.Render(cfg, sick, "v1", "")); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// One run over the hosts: every host is ticked and reported, in order, whatever happened to the
// others; a host that could not be checked outranks a failed heal in the error, each counted
// over the hosts ticked.
func TestTickEachTicksEveryHostAndCountsTheFailures(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		err   string
	}{
		{[]string{"calm"}, ""},
		{[]string{"calm", "sick"}, "watchdog: a heal failed on 1 of 2 hosts (see the log above)"},
		{[]string{"sick", "broken", "calm"}, "watchdog: 1 of 3 hosts could not be checked (see the log above)"},
	} {
		t.Run(strings.Join(tc.hosts, "+"), func(t *testing.T) {
			cfg := tickEachConfig(t) // each its own hosts: sick's failed heal is tried again only an interval later
			var hosts []config.Host
			for _, name := range tc.hosts {
				h, _ := cfg.Host(name)
				hosts = append(hosts, h)
			}
			ws, err := watchdog.ForHosts(cfg, hosts, watchdog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var seen []string
			err = watchdog.TickEach(context.Background(), ws, func(rep watchdog.Report, err error) {
				seen = append(seen, rep.Host)
				if (err != nil) != (rep.Host == "broken") {
					t.Errorf("host %s: tick error %v", rep.Host, err)
				}
				if (rep.Err() != nil) != (rep.Host == "sick") {
					t.Errorf("host %s: heal error %v", rep.Host, rep.Err())
				}
			})
			if !slices.Equal(seen, tc.hosts) {
				t.Errorf("reported %v, want every host in order: %v", seen, tc.hosts)
			}
			if got := fmt.Sprint(err); (err == nil) != (tc.err == "") || (err != nil && got != tc.err) {
				t.Errorf("TickEach = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestForHostsRefusesAHostItCannotWatch(t *testing.T) {
	cfg := tickEachConfig(t)
	cfg.Rollout.Runtime = "bogus"
	if _, err := watchdog.ForHosts(cfg, cfg.Hosts, watchdog.Options{}); err == nil || !strings.Contains(err.Error(), `rollout.runtime "bogus"`) {
		t.Fatalf("ForHosts over an unknown runtime = %v, want an error naming rollout.runtime", err)
	}
	if ws, err := watchdog.ForHosts(cfg, nil, watchdog.Options{}); err != nil || len(ws) != 0 {
		t.Fatalf("no hosts: %v, %v, want none", ws, err)
	}
}
