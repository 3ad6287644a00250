package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/trust"
)

// Root reads only a config that is root's alone: one another user could change (written by
// group or others, owned by another user, or in a directory another user may write) is refused
// naming the file and why, for it names the hooks a deploy runs and what the watchdog heals from;
// the same file made root's loads. (A user other than root reads the configs it is given.)
func TestRootReadsOnlyAConfigThatIsRootsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rule is root's: run as root")
	}
	const yaml = "balancer:\n  interval: 2s\n"
	dir := t.TempDir()
	write := func(path string, mode os.FileMode) string {
		if err := os.WriteFile(path, []byte(yaml), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // writable by anyone, not sticky
		t.Fatal(err)
	}
	someoneElses := write(filepath.Join(dir, "theirs.yaml"), 0o644)
	if err := os.Chown(someoneElses, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, path, says string }{
		{"written by its group", write(filepath.Join(dir, "group.yaml"), 0o664), "mode 0664"},
		{"written by anyone", write(filepath.Join(dir, "world.yaml"), 0o646), "mode 0646"},
		{"owned by another user", someoneElses, "uid 4321"},
		{"in a directory anyone may write", write(filepath.Join(open, "zero502.yaml"), 0o644), open},
	} {
		_, err := Load(tc.path)
		if err == nil {
			t.Errorf("a config %s loaded as root; want it refused", tc.what)
			continue
		}
		if !errors.Is(err, trust.ErrRefused) {
			t.Errorf("a config %s: %v; want a refusal of the trust rule", tc.what, err)
		}
		for _, want := range []string{"config " + tc.path, tc.says, "root's alone", "hooks"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("a config %s: %q does not say %q", tc.what, err, want)
			}
		}
	}
	if _, err := Load(write(filepath.Join(dir, "roots.yaml"), 0o644)); err != nil {
		t.Errorf("a config that is root's alone (0644): %v", err)
	}
}
