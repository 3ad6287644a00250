package watchdog

import (
	"embed"
	"fmt"
	"strings"
	"time"
)

// unitFiles are the watchdog's systemd units as shipped (watchdog/systemd): the timer is written
// for the shipped config's watchdog.interval and is the template of Timer.
//
//go:embed systemd/zero502-watchdog.service systemd/zero502-watchdog.timer
var unitFiles embed.FS

// The watchdog's systemd units.
const (
	ServiceUnitName = "zero502-watchdog.service"
	TimerUnitName   = "zero502-watchdog.timer"
)

// Unit is a systemd unit file: its name and its text.
type Unit struct{ Name, Text string }

// Units are the watchdog's systemd units as a server gets them: zero502-watchdog.service as
// shipped, and zero502-watchdog.timer ticking every interval (Timer), the watchdog.interval of
// the config the watchdog reads there.
func Units(interval time.Duration) ([]Unit, error) {
	service, err := unitFiles.ReadFile("systemd/" + ServiceUnitName)
	if err != nil {
		return nil, err
	}
	timer, err := Timer(interval)
	if err != nil {
		return nil, err
	}
	return []Unit{{ServiceUnitName, string(service)}, {TimerUnitName, timer}}, nil
}

// Timer is the shipped zero502-watchdog.timer with its OnActiveSec= and OnUnitActiveSec= set to
// interval (watchdog.interval): the ticks come an interval after the last one began, never
// sooner, so each tick's failure counts (notCounted) and invariant I5's patience,
// (heal_after − 1) × interval, is the time a failing service waits for its heal. The shipped
// file is Timer of the shipped config's interval, byte for byte.
func Timer(interval time.Duration) (string, error) {
	if interval <= 0 {
		return "", fmt.Errorf("watchdog.interval %s: must be positive: it is the timer's OnUnitActiveSec=", interval)
	}
	data, err := unitFiles.ReadFile("systemd/" + TimerUnitName)
	if err != nil {
		return "", err
	}
	span := systemdSpan(interval)
	lines := strings.Split(string(data), "\n")
	set := map[string]int{"OnActiveSec=": 0, "OnUnitActiveSec=": 0}
	for i, line := range lines {
		for key := range set {
			if strings.HasPrefix(line, key) {
				lines[i] = key + span
				set[key]++
			}
		}
	}
	for key, n := range set {
		if n != 1 {
			return "", fmt.Errorf("the shipped %s has %d lines %s, want 1: it cannot be written for watchdog.interval %s", TimerUnitName, n, key, interval)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// systemdSpan writes d as a time span both systemd and time.ParseDuration read ("90s",
// "1500ms"), rounded up to the microsecond, systemd's unit: the ticks are never closer than d.
func systemdSpan(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dus", (d+time.Microsecond-1)/time.Microsecond)
}
