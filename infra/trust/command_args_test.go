package trust

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A directory argument is judged as a file argument is: `python3 DIR` runs DIR/__main__.py (node
// DIR its index.js), so a directory another user may write is refused. So is a script argument
// that does not exist yet in such a directory: whoever can write it makes the script before the
// exec. Words, options and URLs pass.
func TestCommandChecksADirectoryTheInterpreterRuns(t *testing.T) {
	uid := os.Getuid()
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // world-writable, not sticky
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(open, "__main__.py"), []byte("print('ran from a world-writable dir')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog, err := Command([]string{"python3", open}, "", uid)
	if err == nil {
		if out, rerr := exec.Command(prog, open).CombinedOutput(); rerr == nil {
			t.Logf("python3 %s ran: %s", open, strings.TrimSpace(string(out)))
		}
		t.Errorf("Command(python3 %s) with the directory mode 0777: nil error; want refused (python3 runs %s/__main__.py)", open, open)
	}
	later := filepath.Join(open, "later.sh")
	if _, err := Command([]string{"sh", later}, "", uid); err == nil {
		t.Errorf("Command(sh %s): nil error though %s is mode 0777 and anyone may create the script before it runs; want refused", later, open)
	}
	for _, ok := range [][]string{{"sh", "-c", "echo hi > /nonexistent/x"}, {"echo", "--out=" + later}, {"echo", "https://example.com/a/b"}} {
		if _, err := Command(ok, "", uid); err != nil {
			t.Errorf("Command(%q): %v; want it run (no argument is a path)", ok, err)
		}
	}
}
