package config

import (
	"strings"
	"testing"
)

func mustRefuse(t *testing.T, body string, want ...string) {
	t.Helper()
	_, err := Load(writeConfig(t, body))
	if err == nil {
		t.Fatalf("accepted:\n%s", body)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

const webService = "services:\n  - {name: web, image: x, port: 9000}\n"

func TestTwoHostsOnTheSameBalancedTargetAreRefused(t *testing.T) {
	mustRefuse(t, webService+"hosts:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n  - {name: c, address: 10.0.0.1}\n",
		"hosts[2].address", "10.0.0.1:9000", "host c and host a (hosts[0])", "same balanced target", "port_offset")
	// The demo's way: one address, a port range per host.
	c, err := Load(writeConfig(t, webService+"hosts:\n  - {name: a}\n  - {name: b, port_offset: 100}\n"))
	if err != nil {
		t.Fatalf("two hosts on one address with their own port_offset: %v", err)
	}
	if got := strings.Join(c.Targets(), ","); got != "127.0.0.1:9000,127.0.0.1:9100" {
		t.Fatalf("targets %s", got)
	}
	// Without a service with a port there is no balanced target to share.
	if _, err := Load(writeConfig(t, "services:\n  - {name: worker, image: x}\nhosts:\n  - {name: a}\n  - {name: b}\n")); err != nil {
		t.Fatalf("two worker-only hosts on one address: %v", err)
	}
}

func TestAMisspeltEnvironmentOverrideIsRefused(t *testing.T) {
	t.Setenv("ZERO502_DRIAN_WINDOW", "20s")
	mustRefuse(t, "drain:\n  window: 15s\n", "ZERO502_DRIAN_WINDOW", "did you mean ZERO502_DRAIN_WINDOW?", "unset it or fix its name")
}

func TestEnvironmentVariablesOfConfigKeysAndOfOtherCommandsAreAccepted(t *testing.T) {
	t.Setenv("ZERO502_BALANCER_ADMIN_TOKEN", "s3cret") // a key with _ in its name
	t.Setenv("ZERO502_EDGE_DNS_TTL", "5s")
	for _, name := range EnvNotConfig() {
		t.Setenv(name, "1")
	}
	c, err := Load(writeConfig(t, "drain:\n  window: 15s\n"))
	if err != nil {
		t.Fatalf("known ZERO502_* variables refused: %v", err)
	}
	if c.Balancer.AdminToken != "s3cret" {
		t.Fatalf("admin token %q, want the environment's", c.Balancer.AdminToken)
	}
}

func TestAMisspeltVariableOfAnotherCommandIsRefusedToo(t *testing.T) {
	t.Setenv("ZERO502_SSH_OPT", "-i key")
	mustRefuse(t, "drain:\n  window: 15s\n", "did you mean ZERO502_SSH_OPTS?")
}

const ownStateDirs = "hosts:\n  - {name: host-a, state_dir: /srv/a}\n  - {name: host-b, state_dir: /srv/b, lock_path: /x}\n"

func TestAWatchdogLockPathSomeHostWouldNotUseIsRefused(t *testing.T) {
	mustRefuse(t, "watchdog:\n  lock_path: /x\n"+ownStateDirs,
		"watchdog.lock_path: /x: is not the lock of host host-a (a host with its own state_dir locks /srv/a/deploy.lock): "+
			"set hosts[0].lock_path, or drop watchdog.lock_path from the file")

	t.Setenv("ZERO502_WATCHDOG_LOCK_PATH", "/x")
	mustRefuse(t, ownStateDirs, "host host-a", "from the environment (ZERO502_WATCHDOG_LOCK_PATH)")
}

func TestOneLockPathPerHost(t *testing.T) {
	// The embedded default lock_path is no promise: each host with a state_dir locks its own.
	c, err := Load(writeConfig(t, ownStateDirs))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := c.HostLockPath(c.Hosts[0]), c.HostLockPath(c.Hosts[1]); a != "/srv/a/deploy.lock" || b != "/x" {
		t.Fatalf("lock paths %s %s, want /srv/a/deploy.lock and /x", a, b)
	}
	// An explicit watchdog.lock_path every host uses is fine.
	c, err = Load(writeConfig(t, "watchdog:\n  lock_path: /run/lock/fleet.lock\nhosts:\n  - {name: a}\n  - {name: b, state_dir: /srv/b, lock_path: /run/lock/fleet.lock}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range c.Hosts {
		if got := c.HostLockPath(h); got != "/run/lock/fleet.lock" {
			t.Fatalf("host %s locks %s, want /run/lock/fleet.lock", h.Name, got)
		}
	}
}

// The lock-path rule lets the embedded default through even when a file writes it out (an
// encoded config carries every key): defaultLockPath must be that default.
func TestDefaultLockPathIsTheEmbeddedDefault(t *testing.T) {
	if got := Defaults().Watchdog.LockPath; got != defaultLockPath {
		t.Fatalf("embedded watchdog.lock_path %q, defaultLockPath %q: keep them equal", got, defaultLockPath)
	}
	cfg, err := LoadBytes([]byte("watchdog: {lock_path: '"+defaultLockPath+"'}\nhosts: [{name: a, state_dir: /srv/a}]\n"), "encoded")
	if err != nil || cfg.HostLockPath(cfg.Hosts[0]) != "/srv/a/deploy.lock" {
		t.Fatalf("a config writing out the default lock path: %v, want it loaded", err)
	}
}

// By default a host's lock is deploy.lock in its state dir: the deploy user owns that directory
// and shares the lock with root there (/run/lock, sticky, lets any user make the lock first).
func TestTheDefaultLockIsInTheHostsStateDir(t *testing.T) {
	cfg, err := LoadBytes([]byte("watchdog: {state_dir: /srv/z}\nhosts: [{name: a}, {name: b, state_dir: /srv/b}]\n"), "default")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := cfg.HostLockPath(cfg.Hosts[0]), cfg.HostLockPath(cfg.Hosts[1]); a != "/srv/z/deploy.lock" || b != "/srv/b/deploy.lock" {
		t.Fatalf("default lock paths %s, %s; want /srv/z/deploy.lock and /srv/b/deploy.lock", a, b)
	}
}

// A list key (balancer.admins, rollout.alarms…) cannot be set from the environment, whose
// variables hold text: its variable is refused naming it and saying to set the key in the file,
// never told to write a list it could not hold either (["a", "b"] is text too).
func TestAListKeySetFromTheEnvironmentIsRefusedSayingWhereToSetIt(t *testing.T) {
	for name, key := range map[string]string{"ZERO502_BALANCER_ADMINS": "balancer.admins", "ZERO502_ROLLOUT_ALARMS": "rollout.alarms"} {
		for _, value := range []string{"10.0.0.1:8081,10.0.0.2:8081", `["a", "b"]`} {
			t.Run(name+"="+value, func(t *testing.T) {
				t.Setenv(name, value)
				_, err := Load(writeConfig(t, "drain:\n  window: 15s\n"))
				if err == nil {
					t.Fatalf("%s=%s loaded; want it refused", name, value)
				}
				for _, want := range []string{name + "=" + value, "cannot be set from the environment", "set " + key + " in the config file"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("refusal %q does not say %q", err, want)
					}
				}
				if strings.Contains(err.Error(), `e.g. ["a", "b"]`) {
					t.Errorf("refusal %q tells to write a list the environment cannot hold", err)
				}
			})
		}
	}
}
