//go:build linux

package process

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/osuser"
)

// A service run as another user (services[].user, published as run_as) gets that user's uid and
// its HOME, USER and LOGNAME, not the starter's.
func TestAServiceRunsAsItsUserWithThatUsersHome(t *testing.T) {
	u := osuser.Ensure(t, osuser.Service)
	rt := newRuntime(t, t.TempDir())
	inst := start(t, rt, spec.Service{Name: "web", Version: "v1", Command: []string{"sleep", "60"}, User: osuser.Service, RunAs: osuser.Service})

	pid, err := strconv.Atoi(strings.TrimPrefix(inst.ID, "pid:"))
	if err != nil {
		t.Fatalf("instance id %q: %v", inst.ID, err)
	}
	if got, want := osuser.UIDOf(t, pid), osuser.UID(t, u); got != want {
		t.Errorf("the service runs as uid %d, want %s's %d", got, u.Username, want)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(data), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, want := range map[string]string{"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username} {
		if env[k] != want {
			t.Errorf("%s=%q in the service's environment, want %q", k, env[k], want)
		}
	}
}

// A user the host does not know is refused before anything starts, naming the key and the user.
func TestAnUnknownServiceUserIsRefusedAndNothingStarts(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	marker := filepath.Join(t.TempDir(), "ran")
	_, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v1",
		Command: []string{"touch", marker}, User: "no-such-user-zero502", RunAs: "no-such-user-zero502"})
	if err == nil || !strings.Contains(err.Error(), "services[].user") || !strings.Contains(err.Error(), `"no-such-user-zero502"`) {
		t.Fatalf("Start as an unknown user: %v; want a refusal naming services[].user and the user", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although its user is unknown")
	}
	if insts, _ := rt.List(context.Background(), runtime.Filter{}); len(insts) != 0 {
		t.Fatalf("instances after the refusal: %+v", insts)
	}
}

// A service's program, or the script its interpreter reads, in a directory another user may
// write is refused before anything starts: the process runtime runs it as the spec's user
// (root, for a root deploy), and whoever may swap the file would choose what that user runs.
func TestAServiceProgramAnotherUserMayChangeIsRefused(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	prog := filepath.Join(open, "server.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+marker+"\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, command := range [][]string{{prog}, {"sh", prog}} {
		_, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v1", Command: command})
		if err == nil || !strings.Contains(err.Error(), "services[].command") || !strings.Contains(err.Error(), open+" has mode 0777") {
			t.Fatalf("Start of %q: %v; want a refusal naming services[].command and the directory's mode", command, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused program ran")
	}
	if insts, _ := rt.List(context.Background(), runtime.Filter{}); len(insts) != 0 {
		t.Fatalf("instances after the refusal: %+v", insts)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	start(t, rt, spec.Service{Name: "web", Version: "v1", Command: []string{"sh", prog}})
}

// An instance record another user could have written (it names the pid zero502 signals) is not
// believed: listing the service's instances is an error naming the record.
func TestAWritableInstanceRecordIsNotBelieved(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	start(t, rt, spec.Service{Name: "web", Version: "v1", Command: []string{"sleep", "60"}})
	path := rt.recordPath("web")
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(path, 0o600) }) // (before newRuntime's cleanup stops the process)
	_, err := rt.List(context.Background(), runtime.Filter{Service: "web"})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("List with a 0666 record: %v; want a refusal naming %s", err, path)
	}
}

// A symlink planted where a service's log goes is not followed: the start is refused and the
// file it points to stays untouched.
func TestALogPathSymlinkIsNotFollowed(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, rt.LogPath("web")); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v1", Command: []string{"sleep", "60"}}); err == nil {
		t.Fatal("Start appended to a log path that is a symlink")
	}
	if data, _ := os.ReadFile(victim); string(data) != "mine\n" {
		t.Fatalf("the symlink's target was written: %q", data)
	}
}
