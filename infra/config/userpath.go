package config

import (
	"os"
	"strconv"
	"strings"
)

// UIDPlaceholder in a state dir or a lock path (watchdog.state_dir, watchdog.lock_path,
// hosts[].state_dir, hosts[].lock_path, rollout.lock_path) stands for the uid zero502 runs as
// where the path is used: the host's own user for a host reached over ssh, the deployer's for a
// local one. /tmp/zero502-{uid} is a directory of each user's own, so another user cannot
// create the quick start's state dir first (and would be refused by trust.Check if they did:
// it names the directory, its owner and mode).
const UIDPlaceholder = "{uid}"

// userPath is p with UIDPlaceholder replaced by the uid of this process (on Windows, which
// has no uid, by the user name).
func userPath(p string) string {
	if !strings.Contains(p, UIDPlaceholder) {
		return p
	}
	who := strconv.Itoa(os.Getuid())
	if os.Getuid() < 0 {
		who = os.Getenv("USERNAME")
	}
	return strings.ReplaceAll(p, UIDPlaceholder, who)
}
