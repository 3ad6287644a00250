//go:build linux

package docker

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// The sandbox program is a well-formed static executable for each architecture it is made for:
// one loadable segment holding the entry point, no interpreter.
func TestThePauseProgramIsAStaticExecutableForEachArchitecture(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		prog, err := pauseProgram(arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		f, err := elf.NewFile(bytes.NewReader(prog))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if f.Class != elf.ELFCLASS64 || f.Machine != machine || f.Type != elf.ET_EXEC || len(f.Progs) != 1 {
			t.Fatalf("%s: class %v machine %v type %v, %d segments", arch, f.Class, f.Machine, f.Type, len(f.Progs))
		}
		p := f.Progs[0]
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || f.Entry < p.Vaddr || f.Entry >= p.Vaddr+p.Filesz || p.Filesz != uint64(len(prog)) {
			t.Fatalf("%s: segment %+v, entry %#x: the entry point is not in the executable segment", arch, p.ProgHeader, f.Entry)
		}
	}
	if _, err := pauseProgram("s390x"); err == nil || !strings.Contains(err.Error(), "s390x") {
		t.Fatalf("an architecture without a program: %v, want an error naming it", err)
	}
}

// On this machine's architecture the program runs and stays asleep, signals and all, until it
// is killed.
func TestThePauseProgramSleepsUntilKilled(t *testing.T) {
	prog, err := pauseProgram(goruntime.GOARCH)
	if err != nil {
		t.Skipf("no pause program for %s: %v", goruntime.GOARCH, err)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, prog, 0o555); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		t.Fatalf("exec the pause program: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	sleeping := func() error {
		select {
		case err := <-exited:
			t.Fatalf("the pause program exited: %v", err)
		default:
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			return err
		}
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) == 0 || f[0] != "S" {
			return fmt.Errorf("state %q, want S (asleep in its system call)", stat)
		}
		return nil
	}
	poll.UntilNil(t, 10*time.Second, "the pause program never slept", sleeping)
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGCONT, syscall.SIGWINCH} {
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	poll.UntilNil(t, 10*time.Second, "the pause program did not sleep again after SIGSTOP, SIGCONT and SIGWINCH", sleeping)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("wait after SIGKILL: %v, want killed", err)
	}
}
