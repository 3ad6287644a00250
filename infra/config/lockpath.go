package config

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/viper"
)

// defaultLockPath is the embedded default of watchdog.lock_path (defaults.yaml): none, each host
// locks deploy.lock in its own state dir.
const defaultLockPath = ""

// lockPathEnv is the environment override of watchdog.lock_path.
const lockPathEnv = EnvPrefix + "_WATCHDOG_LOCK_PATH"

// lockPathSetBy says who set watchdog.lock_path explicitly: "the file" when file (the config
// file's own keys, nil without a file) has it, else the environment variable when it is set, else
// "" (the embedded default, which is never an operator's promise).
func lockPathSetBy(file *viper.Viper) string {
	if file != nil && file.InConfig("watchdog.lock_path") {
		return "the file"
	}
	if _, ok := os.LookupEnv(lockPathEnv); ok {
		return "the environment (" + lockPathEnv + ")"
	}
	return ""
}

// checkLockPath keeps one lock path per host. A host's lock is HostLockPath's: hosts[].lock_path,
// else <hosts[].state_dir>/deploy.lock, else watchdog.lock_path. A watchdog.lock_path set
// explicitly (setBy non-empty) that some host would not use, because that host has its own
// state_dir and no lock_path, is refused: an operator's flock(1) on it would protect nothing.
//
// The embedded default itself is never refused, even when written out: an encoded config (the
// one the deployer sends a host over ssh) carries every key, defaults included.
func (c *Config) checkLockPath(setBy string) error {
	if setBy == "" || c.Watchdog.LockPath == defaultLockPath {
		return nil
	}
	for i, h := range c.Hosts {
		if h.LockPath != "" || h.StateDir == "" || c.HostLockPath(h) == userPath(c.Watchdog.LockPath) {
			continue
		}
		return &FieldError{Key: "watchdog.lock_path", Value: c.Watchdog.LockPath, Rule: fmt.Sprintf(
			"is not the lock of host %s (a host with its own state_dir locks %s): set hosts[%d].lock_path, or drop watchdog.lock_path from %s",
			h.Name, c.HostLockPath(h), i, setBy)}
	}
	return nil
}

// MaxLockRenewal is the longest interval between the deployer's renewals of the fleet lock's
// lease on its lock host (rollout.lock_lease).
const MaxLockRenewal = 5 * time.Second

// LockRenewal is how often the deployer renews the fleet lock's lease: every MaxLockRenewal, or
// three times a lease when the lease is shorter.
func (c *Config) LockRenewal() time.Duration {
	return min(MaxLockRenewal, c.Rollout.LockLease/3)
}
