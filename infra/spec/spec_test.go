package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

func TestRenderFillsPlaceholdersPerHost(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "..", "examples", "local.yaml"))
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

// The spec holds services' env (a DB_PASSWORD): it is the owner's alone, and so is its state
// dir's write; a state dir made by the write lets its group read, others not even enter.
func TestThePublishedSpecIsTheOwnersAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host-a") // created by the write
	p := Path(dir)
	if err := Publish(p, Spec{Host: "a", Version: "v1", Services: []Service{{Name: "web", Env: map[string]string{"DB_PASSWORD": "s3cret"}}}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("spec mode %v, want 0600: it holds the services' env", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o750 {
		t.Fatalf("state dir mode %v, want 0750", di.Mode().Perm())
	}
}

// A spec another user could have written is refused, naming the file, its mode or owner and
// the fix: group- or world-writable itself, or in a directory that is, or owned by someone else.
func TestASpecAnotherUserCouldWriteIsRefused(t *testing.T) {
	publish := func(t *testing.T) (string, string) {
		dir := filepath.Join(t.TempDir(), "host-a")
		p := Path(dir)
		if err := Publish(p, Spec{Host: "a", Version: "v1"}); err != nil {
			t.Fatal(err)
		}
		return dir, p
	}
	t.Run("the spec 0666", func(t *testing.T) {
		_, p := publish(t)
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p)
		if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "0666") || !strings.Contains(err.Error(), "chmod go-w") {
			t.Fatalf("Read of a 0666 spec: %v; want ErrUntrusted naming %s, its mode and the fix", err, p)
		}
	})
	t.Run("its state dir 0777", func(t *testing.T) {
		dir, p := publish(t)
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Read of a spec in a 0777 dir: %v; want ErrUntrusted naming %s", err, dir)
		}
	})
	t.Run("owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chown to another user needs root")
		}
		_, p := publish(t)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "uid 65534") {
			t.Fatalf("Read of a spec owned by uid 65534: %v; want ErrUntrusted naming the owner", err)
		}
	})
}
