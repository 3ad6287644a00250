package process

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zero502/zero502/infra/spec"
)

func specService(cmd string, env map[string]string) spec.Service {
	return spec.Service{Name: "web", Version: "v1", Command: []string{cmd}, Env: env}
}

// An empty element of the service's PATH (a leading or trailing ':') is skipped, never taken as
// the working directory: a bare name is not found in whatever directory the starter sits in, so
// a deploy from a shell and a heal by the watchdog cannot run different programs.
func TestAnEmptyPATHElementIsNotTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "myprog"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, path := range []string{"/nonexistent-dir:", ":/nonexistent-dir", "/nonexistent-dir::/nonexistent-2", "."} {
		if p, err := lookPath("myprog", []string{"PATH=" + path}); err == nil {
			t.Fatalf("lookPath(myprog) with PATH=%s found %q: a file of the current directory %s", path, p, dir)
		}
	}
	if p, err := lookPath("myprog", []string{"PATH=/nonexistent-dir:" + dir}); err != nil || p != filepath.Join(dir, "myprog") {
		t.Fatalf("lookPath(myprog) with %s on PATH = %q, %v; want %s", dir, p, err, filepath.Join(dir, "myprog"))
	}
}

// A service's program is found on the service's PATH or not at all: a name its PATH does not
// have is an error, never looked up again on zero502's own PATH (the deployer's, the
// watchdog's), which would let the starter's environment choose the program.
func TestAServiceProgramIsNeverFoundOnTheStartersPATH(t *testing.T) {
	cwd, starterBin := t.TempDir(), t.TempDir()
	for _, d := range []string{cwd, starterBin} {
		if err := os.WriteFile(filepath.Join(d, "myprog"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(cwd)
	t.Setenv("PATH", starterBin+":"+os.Getenv("PATH")) // the deployer's PATH
	p, err := programOf(specService("myprog", map[string]string{"PATH": "/nonexistent-dir:"}))
	if err == nil {
		t.Fatalf("programOf = %s; want an error (no program on the service's PATH /nonexistent-dir:)", p.path)
	}
}
