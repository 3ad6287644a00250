package watchdog_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/watchdog"
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
	// As zero502 host install writes them for a config's watchdog.interval.
	for _, interval := range []time.Duration{90 * time.Second, 1500 * time.Millisecond} {
		written, err := watchdog.Units(interval)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		var files []string
		for _, u := range written {
			file := filepath.Join(dir, u.Name)
			if err := os.WriteFile(file, []byte(strings.ReplaceAll(u.Text, "/usr/local/bin/zero502", self)), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, file)
		}
		out, err := exec.Command(tool, append([]string{"verify"}, files...)...).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			t.Fatalf("systemd-analyze verify of the units written for watchdog.interval %s: %v\n%s", interval, err, out)
		}
	}
}

// The units say what the design says: a oneshot tick, at least a minute apart (the shipped
// config's watchdog.interval), randomised; its
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
	// The shipped file is the timer host install writes for the shipped config.
	written, err := watchdog.Timer(cfg.Watchdog.Interval)
	if err != nil {
		t.Fatal(err)
	}
	if written != string(data) {
		t.Errorf("the timer written for examples/production.yaml's watchdog.interval %s is not the shipped one:\n%s\nshipped:\n%s",
			cfg.Watchdog.Interval, written, data)
	}
}

// The timer a server gets ticks every watchdog.interval of its config (OnActiveSec= and
// OnUnitActiveSec=), in a form systemd and Go both read, never sooner; the rest is the shipped
// file's. With the shipped 60s beside a config's 90s, two ticks in three would only be logged as
// not counted.
func TestTheTimerTicksEveryWatchdogInterval(t *testing.T) {
	shipped, err := os.ReadFile(filepath.Join("systemd", "zero502-watchdog.timer"))
	if err != nil {
		t.Fatal(err)
	}
	for interval, want := range map[time.Duration]string{
		90 * time.Second:        "90s",
		10 * time.Minute:        "600s",
		1500 * time.Millisecond: "1500ms",
		1500 * time.Nanosecond:  "2us",
	} {
		timer, err := watchdog.Timer(interval)
		if err != nil {
			t.Fatal(err)
		}
		got, old := strings.Split(timer, "\n"), strings.Split(string(shipped), "\n")
		if len(got) != len(old) {
			t.Fatalf("timer for %s: %d lines, the shipped one %d", interval, len(got), len(old))
		}
		for i := range got {
			key, _, _ := strings.Cut(old[i], "=")
			switch key {
			case "OnActiveSec", "OnUnitActiveSec":
				if got[i] != key+"="+want {
					t.Errorf("timer for %s: %q, want %s=%s", interval, got[i], key, want)
				}
				if d, err := time.ParseDuration(want); err != nil || d < interval {
					t.Errorf("timer for %s: %s reads as %s (%v): sooner than the interval", interval, want, d, err)
				}
			default:
				if got[i] != old[i] {
					t.Errorf("timer for %s: line %d is %q, the shipped one %q", interval, i+1, got[i], old[i])
				}
			}
		}
	}
	if _, err := watchdog.Timer(0); err == nil || !strings.Contains(err.Error(), "watchdog.interval 0s: must be positive") {
		t.Errorf("Timer(0) = %v; want a refusal naming watchdog.interval", err)
	}
	units, err := watchdog.Units(90 * time.Second)
	if err != nil || len(units) != 2 || units[0].Name != watchdog.ServiceUnitName || units[1].Name != watchdog.TimerUnitName ||
		!strings.Contains(units[1].Text, "\nOnUnitActiveSec=90s\n") {
		t.Errorf("Units(90s) = %+v, %v; want the service and the timer ticking every 90s", units, err)
	}
}
