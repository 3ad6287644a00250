package watchdog_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// The shipped units pass systemd-analyze verify (when the tool is installed). ExecStart's
// /usr/local/bin/zero502 is pointed at an existing executable first: verify checks that it exists.
func TestSystemdUnitsVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var units []string
	for _, name := range []string{"zero502-watchdog.service", "zero502-watchdog.timer"} {
		data, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(data), "/usr/local/bin/zero502", self)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, filepath.Join(dir, name))
	}
	// The drop-in for a non-root deploy user, where watchdog/README.md says to put it.
	dropIns := filepath.Join(dir, "zero502-watchdog.service.d")
	data, err := os.ReadFile(filepath.Join("systemd", "deploy-user.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\nUser=deploy\n") {
		t.Fatalf("deploy-user.conf sets no User=:\n%s", data)
	}
	if err := os.Mkdir(dropIns, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dropIns, "deploy-user.conf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, append([]string{"verify"}, units...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("systemd-analyze verify (with the deploy-user drop-in): %v\n%s", err, out)
	}
}

// The units say what the design says: a oneshot tick, at least a minute apart, randomised; its
// end stops the tick alone (KillMode=process), not a service it healed on the process runtime,
// which runs in the tick's cgroup, and gives that service no Nice= of its own.
func TestSystemdUnitsAreAOneshotTickEveryMinute(t *testing.T) {
	if data, err := os.ReadFile(filepath.Join("systemd", "zero502-watchdog.service")); err != nil || strings.Contains(string(data), "\nNice=") {
		t.Errorf("zero502-watchdog.service sets Nice= (a healed service would inherit it) or is unreadable: %v", err)
	}
	for name, wants := range map[string][]string{
		"zero502-watchdog.service": {"Type=oneshot", "ExecStart=/usr/local/bin/zero502 watchdog --config ", "KillMode=process"},
		"zero502-watchdog.timer":   {"OnActiveSec=60s", "OnUnitActiveSec=60s", "RandomizedDelaySec=", "Unit=zero502-watchdog.service", "WantedBy=timers.target"},
	} {
		data, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(data), "\n"+w) {
				t.Errorf("%s lacks a line starting %q", name, w)
			}
		}
	}
}

// I5 takes the watchdog's ticks to be watchdog.interval apart at least: the shipped timer's ticks
// are never closer than the shipped config's interval. A calendar timer (OnCalendar=) with a
// randomised delay runs two ticks closer than its period (one late, the next early), so it must
// not be one; a timer from the last run (OnUnitActiveSec=) is only ever delayed.
func TestTheShippedTimerTicksAtLeastTheShippedIntervalApart(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("systemd", "zero502-watchdog.timer"))
	if err != nil {
		t.Fatal(err)
	}
	var every time.Duration
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "OnCalendar=") {
			t.Errorf("%s: a calendar timer with RandomizedDelaySec= runs two ticks closer than its period", line)
		}
		if strings.HasPrefix(line, "OnBootSec=") || strings.HasPrefix(line, "OnStartupSec=") {
			t.Errorf("%s: long past when the timer is restarted (an upgrade), it fires at once, maybe a moment after the last tick", line)
		}
		if v, ok := strings.CutPrefix(line, "OnUnitActiveSec="); ok {
			if every, err = time.ParseDuration(v); err != nil {
				t.Fatalf("%s: %v (write it as Go and systemd both read it, e.g. 60s)", line, err)
			}
		}
	}
	cfg, err := config.Load(filepath.Join("..", "examples", "production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if every < cfg.Watchdog.Interval {
		t.Errorf("the timer ticks every %s (OnUnitActiveSec), the shipped config says watchdog.interval %s: I5 counts on ticks at least that far apart", every, cfg.Watchdog.Interval)
	}
}
