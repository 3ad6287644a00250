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
