package watchdog_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/spec"
)

// A spec anyone could write (0666, its command replaced) is never run: every tick is an error
// naming the file, its mode and the fix, and the replaced command never executes, however many
// failed checks pass.
func TestAWritableSpecIsNeverRun(t *testing.T) {
	f := processFixture(t)
	f.kill("worker")
	marker := filepath.Join(t.TempDir(), "ran")
	s, err := spec.Read(spec.Path(f.dir))
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Services {
		if s.Services[i].Name == "worker" {
			s.Services[i].Command = []string{"touch", marker}
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec.Path(f.dir), data, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(spec.Path(f.dir), 0o666); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < f.cfg.Watchdog.HealAfter+1; i++ {
		_, err := f.w.Tick(context.Background())
		if !errors.Is(err, spec.ErrUntrusted) || !strings.Contains(err.Error(), spec.Path(f.dir)) || !strings.Contains(err.Error(), "0666") {
			t.Fatalf("tick %d over a 0666 spec = %v; want ErrUntrusted naming the file and its mode", i, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the watchdog ran the command of a spec anyone could write")
	}
	if n := len(f.running("worker")); n != 0 {
		t.Fatalf("%d worker instances run: the watchdog healed from an untrusted spec", n)
	}
}
