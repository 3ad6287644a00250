//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zero502/zero502/internal/testrig/osuser"
)

// examples/local.yaml's state dirs are /tmp/zero502-{uid}/…: each user's own. One that another
// user made first is refused by the watchdog's tick, naming the directory and its owner, and
// nothing runs from it; a fresh one is made by the tick, private to the user who runs zero502.
func TestTheQuickStartsStateDirIsTheUsersOwn(t *testing.T) {
	other := osuser.Ensure(t, osuser.Service)
	root := t.TempDir()
	local, err := os.ReadFile(filepath.Join("..", "..", "examples", "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(local), "/tmp/zero502-{uid}/") {
		t.Fatal("examples/local.yaml no longer keeps its state under /tmp/zero502-{uid}")
	}
	config := filepath.Join(root, "local.yaml")
	if err := os.WriteFile(config, []byte(strings.ReplaceAll(string(local), "/tmp/zero502-{uid}", root+"/zero502-{uid}")), 0o600); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(root, fmt.Sprintf("zero502-%d", os.Getuid()))
	out, code := runCLI(t, "host", "lock-path", "--config", config, "--host", "host-a")
	if code != 0 || out != mine+"/host-a/deploy.lock\n" {
		t.Fatalf("host lock-path: exit %d, %q; want %s/host-a/deploy.lock, {uid} being this user's", code, out, mine)
	}

	// another user made it first
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mine, osuser.UID(t, other), -1); err != nil {
		t.Fatal(err)
	}
	out, code = runCLI(t, "watchdog", "--config", config, "--host", "host-a")
	if code == 0 || !strings.Contains(out, mine) || !strings.Contains(out, osuser.Service) {
		t.Fatalf("a tick in a state dir %s owns: exit %d, output:\n%s\nwant a refusal naming %s and its owner", osuser.Service, code, out, mine)
	}
	if _, err := os.Stat(filepath.Join(mine, "host-a")); err == nil {
		t.Fatal("the refused tick made host-a's state dir inside the other user's directory")
	}

	// a fresh one
	if err := os.RemoveAll(mine); err != nil {
		t.Fatal(err)
	}
	if out, code := runCLI(t, "watchdog", "--config", config, "--host", "host-a"); code != 0 {
		t.Fatalf("a tick with no state dir yet: exit %d:\n%s", code, out)
	}
	for _, dir := range []string{mine, filepath.Join(mine, "host-a")} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatalf("the tick made no %s: %v", dir, err)
		}
		if owner := int(fi.Sys().(*syscall.Stat_t).Uid); owner != os.Getuid() || fi.Mode().Perm()&0o027 != 0 {
			t.Fatalf("%s: owner uid %d, mode %04o; want this user's (uid %d), no group write and nothing for others",
				dir, owner, fi.Mode().Perm(), os.Getuid())
		}
	}
}
