package config

import (
	"strings"
	"testing"
)

// A relative state dir or lock path is refused, naming the key, the value and the rule: each
// process would resolve it against its own working directory, so the deployer (over ssh, in the
// deploy user's home) and the watchdog (under systemd, in /) locked two different files and the
// watchdog healed in the middle of a deploy.
func TestRelativeStateAndLockPathsAreRefused(t *testing.T) {
	base := "services: [{name: worker, command: [/bin/true]}]\n"
	for key, yaml := range map[string]string{
		"watchdog.state_dir": "rollout: {runtime: process}\nwatchdog: {state_dir: state}\nhosts: [{name: h1, address: 127.0.0.1}]",
		"watchdog.lock_path": "rollout: {runtime: process}\nwatchdog: {state_dir: /var/lib/x, lock_path: locks/deploy.lock}\nhosts: [{name: h1, address: 127.0.0.1}]",
		"rollout.lock_path":  "watchdog: {state_dir: /var/lib/x}\nrollout: {runtime: process, lock_path: fleet.lock}\nhosts: [{name: h1, address: 127.0.0.1}]",
		"hosts[0].state_dir": "rollout: {runtime: process}\nwatchdog: {state_dir: /var/lib/x}\nhosts: [{name: h1, address: 127.0.0.1, state_dir: ./h1}]",
		"hosts[1].lock_path": "rollout: {runtime: process}\nwatchdog: {state_dir: /var/lib/x}\nhosts: [{name: h1, address: 127.0.0.1}, {name: h2, address: 127.0.0.1, lock_path: '{uid}/h2.lock'}]",
	} {
		_, err := LoadBytes([]byte(base+yaml), "config")
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "must be an absolute path") {
			t.Errorf("%s relative: %v; want it refused, naming %s and the rule", key, err, key)
		}
	}
	ok := base + "rollout: {runtime: process}\nwatchdog: {state_dir: '/tmp/zero502-{uid}'}\nhosts: [{name: h1, address: 127.0.0.1, lock_path: '/tmp/zero502-{uid}/h1.lock'}]"
	if _, err := LoadBytes([]byte(ok), "config"); err != nil {
		t.Errorf("absolute paths (with {uid}): %v", err)
	}
}
