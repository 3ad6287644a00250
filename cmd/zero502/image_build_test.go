package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A --tag no image can have is a bad flag: exit 2 naming the flag, the value and the rule,
// before the Docker Engine is asked anything (here there is none).
func TestImageBuildRefusesABadTagWithExitTwo(t *testing.T) {
	engine := "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
	for _, tag := range []string{"Zero502/App:dev", "bad tag", ""} {
		out, code := runCLI(t, "image", "build", "--docker-host", engine, "--tag", tag)
		if code != 2 || !strings.Contains(out, "--tag "+`"`+tag+`"`) || !strings.Contains(out, "must be a lower-case image name") {
			t.Errorf("image build --tag %q: exit %d, output %q; want exit 2 naming --tag, the value and the rule", tag, code, out)
		}
	}
}
