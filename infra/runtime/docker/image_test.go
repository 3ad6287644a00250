package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/trust"
)

func TestCheckStaticRefusesADynamicBinary(t *testing.T) {
	// The test binary itself is built with the default cgo settings; /bin/sh surely is dynamic.
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	err := CheckStatic("/bin/sh")
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("CheckStatic(/bin/sh) = %v, want a refusal naming CGO_ENABLED=0", err)
	}
	notELF := filepath.Join(t.TempDir(), "x")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	if err := CheckStatic(notELF); err == nil {
		t.Fatal("CheckStatic accepted a shell script")
	}
}

func TestContainerNameIsSafeAndUnique(t *testing.T) {
	a, b := containerName("host-a", "web", "v1+build/7"), containerName("host-a", "web", "v1+build/7")
	if a == b {
		t.Fatalf("two names are equal: %s", a)
	}
	if !strings.HasPrefix(a, "zero502-host-a-web-v1_build_7-") || nameUnsafe.MatchString(a) {
		t.Fatalf("name %q: want zero502-host-a-web-v1_build_7-<hex> with only [a-zA-Z0-9_.-]", a)
	}
}

// A port is published on the IP the address names, a name resolved on the host, and never on
// every interface unless the address says so (Docker's publishing bypasses INPUT rules).
func TestBindIPIsTheAddressesIPNeverEveryInterfaceUnasked(t *testing.T) {
	ctx := context.Background()
	for addr, want := range map[string]string{
		"127.0.0.1:8000": "127.0.0.1", "10.0.0.5:80": "10.0.0.5", "[::1]:80": "::1",
		"localhost:8000": "127.0.0.1", // a name: resolved (/etc/hosts), not every interface
		"0.0.0.0:80":     "0.0.0.0",   // every interface, because the config asks
	} {
		got, err := bindIP(ctx, addr)
		if err != nil || got.String() != want {
			t.Errorf("bindIP(%q) = %v, %v; want %s", addr, got, err, want)
		}
	}
	for _, addr := range []string{"no-such-host.invalid:80", ":80", ""} {
		got, err := bindIP(ctx, addr)
		if err == nil || !strings.Contains(err.Error(), "hosts[].address") || !strings.Contains(err.Error(), fmt.Sprintf("%q", addr)) {
			t.Errorf("bindIP(%q) = %v, %v; want an error naming the address and hosts[].address", addr, got, err)
		}
	}
}

// fakeGo puts a go on PATH, in dir, that only leaves a mark (the returned path) that it ran.
func fakeGo(t *testing.T, dir string) string {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "go-ran")
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte("#!/bin/sh\ntouch "+mark+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return mark
}

// zero502Module writes a go.mod naming the zero502 module and a cmd/zero502 into dir.
func zero502Module(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "cmd", "zero502"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"go.mod": "module " + Module + "\n\ngo 1.22\n",
		filepath.Join("cmd", "zero502", "main.go"): "package main\n\nfunc main() { println(\"built from \" + \"" + dir + "\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// notStatic is a file CheckStatic refuses, standing for a zero502 built by go install (dynamic).
func notStatic(t *testing.T) string {
	t.Helper()
	self := filepath.Join(t.TempDir(), "zero502")
	if err := os.WriteFile(self, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return self
}

// Given neither --binary nor --source, a zero502 that is not static builds no module it finds
// around the working directory: the first go.mod naming the module above it may be one another
// user put in a directory they can write. The error says to pass --binary or --source, and why
// that module is not one to build.
func TestImageBuildBuildsNoModuleAnotherUserPutAroundTheWorkingDirectory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir string)
		want  string
	}{
		{"owned by another user", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			for _, p := range []string{dir, filepath.Join(dir, "go.mod")} {
				if err := os.Chown(p, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
		}, "is owned by uid 65534"},
		{"world-writable", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "has mode 0777"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := t.TempDir()
			if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil { // like /tmp
				t.Fatal(err)
			}
			planted := filepath.Join(shared, "planted")
			zero502Module(t, planted)
			work := filepath.Join(planted, "mine")
			if err := os.Mkdir(work, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, planted)
			bins := t.TempDir()
			ran := fakeGo(t, bins)
			t.Chdir(work)

			bin, _, cleanup, err := resolveBinary(context.Background(), BuildOptions{}, notStatic(t), io.Discard)
			defer cleanup()
			if err == nil {
				t.Fatalf("resolveBinary picked %s, want a refusal: this zero502 is not static and no --binary or --source was given", bin)
			}
			for _, want := range []string{"--binary", "--source DIR", "planted", tc.want, "must be owned by root or the user"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("resolveBinary = %v\nwant an error with %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "--source "+planted) {
				t.Errorf("resolveBinary = %v\nwant no advice to build the planted module", err)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("go build ran for a module nobody named")
			}
		})
	}
}

// The module around the working directory is built only when all of it passes the trust rule,
// not only the working directory, its parents and go.mod: a directory of it another user may
// write, or a file (a .go source, go.sum, an embedded file) they may write, is their code in
// every container. The refusal names that file and its mode, and go build never runs.
func TestImageBuildBuildsNoModuleWithASourceAnotherUserMayWrite(t *testing.T) {
	for _, tc := range []struct {
		path string // below the module's root
		mode os.FileMode
	}{
		{"cmd/zero502", 0o777},
		{"cmd/zero502/main.go", 0o666},
		{"infra/x/x.go", 0o664},
		{"go.sum", 0o666},
		{"defaults.yaml", 0o666},
	} {
		t.Run(tc.path, func(t *testing.T) {
			root := t.TempDir()
			zero502Module(t, root)
			if err := os.MkdirAll(filepath.Join(root, "infra", "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"infra/x/x.go", "go.sum", "defaults.yaml"} {
				if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(root, tc.path)
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			ran := fakeGo(t, t.TempDir())
			t.Chdir(root)

			_, _, cleanup, err := resolveBinary(context.Background(), BuildOptions{}, notStatic(t), io.Discard)
			defer cleanup()
			if _, statErr := os.Stat(ran); statErr == nil {
				t.Fatalf("go build ran on a module whose %s has mode %04o: another user's code goes into every container", p, tc.mode)
			}
			if err == nil || !strings.Contains(err.Error(), p+" has mode "+fmt.Sprintf("%04o", tc.mode)) || !strings.Contains(err.Error(), "--binary") {
				t.Fatalf("resolveBinary = %v; want a refusal naming %s, its mode and what to pass instead", err, p)
			}
		})
	}
}

// A module of this user's around the working directory, in directories no one else may write,
// is built when this zero502 is not static (`go run ./cmd/zero502 demo --runtime docker` in a
// checkout), by a go that passes the program rule.
func TestImageBuildBuildsThisUsersModuleAroundTheWorkingDirectory(t *testing.T) {
	root := t.TempDir()
	zero502Module(t, root)
	work := filepath.Join(root, "cmd", "zero502")
	ran := fakeGo(t, t.TempDir())
	t.Chdir(work)

	_, _, cleanup, err := resolveBinary(context.Background(), BuildOptions{}, notStatic(t), io.Discard)
	defer cleanup()
	// The fake go fails after leaving its mark: the build was run, in the module's root.
	if _, statErr := os.Stat(ran); statErr != nil || err == nil || !strings.Contains(err.Error(), "go build ./cmd/zero502 in "+root) {
		t.Fatalf("resolveBinary = %v (go ran: %v); want go build run in %s", err, statErr == nil, root)
	}
}

// The go that builds the image's binary from --source must pass infra/trust's program rule: one
// in a directory another user may write is refused, naming it, its mode and the rule, before it
// runs.
func TestImageBuildRunsNoGoAnotherUserMayChange(t *testing.T) {
	src := t.TempDir()
	zero502Module(t, src)
	bins := t.TempDir()
	ran := fakeGo(t, bins)
	if err := os.Chmod(bins, 0o777); err != nil {
		t.Fatal(err)
	}

	_, _, cleanup, err := resolveBinary(context.Background(), BuildOptions{Source: src}, notStatic(t), io.Discard)
	defer cleanup()
	for _, want := range []string{filepath.Join(bins, "go"), "directory " + bins + " has mode 0777", trust.ProgramRule, "--binary FILE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resolveBinary with go in a 0777 directory = %v\nwant a refusal with %q", err, want)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a go another user may change ran")
	}
	if err := os.Chmod(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := resolveBinary(context.Background(), BuildOptions{Source: src}, notStatic(t), io.Discard); err == nil {
		t.Fatal("resolveBinary succeeded with a go that fails")
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the trusted go did not run: %v", err)
	}
}
