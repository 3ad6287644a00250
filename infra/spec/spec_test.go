package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra"
)

func TestRenderFillsPlaceholdersPerHost(t *testing.T) {
	cfg, err := infra.Load(filepath.Join("..", "..", "examples", "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := Render(cfg, cfg.Hosts[1], "v2", "/bin/zero502")
	web, ok := s.Service("web")
	if !ok {
		t.Fatal("no web service")
	}
	got := strings.Join(web.Command, " ")
	want := "/bin/zero502 app --version v2 --port 19101 --drain 1.5s --shutdown 1s --idle-timeout 10s"
	if got != want || web.Address != "127.0.0.1:19101" || web.Version != "v2" {
		t.Fatalf("rendered %q at %s, want %q at 127.0.0.1:19101", got, web.Address, want)
	}
}

func TestPublishThenReadRoundTrips(t *testing.T) {
	p := Path(t.TempDir())
	if _, err := Read(p); !errors.Is(err, ErrNone) {
		t.Fatalf("fresh host: %v, want ErrNone", err)
	}
	in := Spec{Host: "a", Version: "v1", Services: []Service{{Name: "web", Version: "v1", Port: 9001}}}
	if err := Publish(p, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if out.Version != "v1" || out.PublishedBy == "" || len(out.Services) != 1 {
		t.Fatalf("read back %+v", out)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temp files left beside the spec: %v", entries)
	}
}

func TestCorruptSpecIsAnErrorNotACrash(t *testing.T) {
	p := Path(t.TempDir())
	os.WriteFile(p, []byte("{half"), 0o644)
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt spec: %v", err)
	}
}

func TestPublishedFilesAreReadableByOtherUsers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host-a") // created by the write
	p := Path(dir)
	if err := Publish(p, Spec{Host: "a", Version: "v1"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != FileMode {
		t.Fatalf("spec mode %v, want %v (a status reader running as another user must read it)", fi.Mode().Perm(), FileMode)
	}
	if err := WriteAtomic(p, []byte("{}\n")); err != nil { // a rewrite keeps the mode
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != FileMode {
		t.Fatalf("rewritten spec mode %v, want %v", fi.Mode().Perm(), FileMode)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm()&^DirMode != 0 || di.Mode().Perm()&0o055 != 0o055 {
		t.Fatalf("state dir mode %v, want %v", di.Mode().Perm(), DirMode)
	}
}
