package watchdog_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/watchdog"
)

// The server's copy of the config names another state dir than the deployer's: the deploy
// published its spec in the deployer's, so the watchdog finds none in its own while the deployed
// services run. That tick fails (the command exits non-zero, so systemd flags the unit), naming
// the spec path it looked at and what runs, and never touches the instances; a held host lock
// still skips the tick. The watchdog's runtime here is the one that ran the deploy, as Docker
// is: one per machine, whatever the state dir (the process runtime keeps its records in the
// state dir, so there it sees the deploy's instances only when the dirs agree).
func TestServicesRunningWithoutASpecAtTheStateDirFailTheTick(t *testing.T) {
	port := tcpserver.FreePort(t)
	deployers := processFixture(t) // published v1 in its state dir and started web and worker
	servers := processConfig(t, t.TempDir(), port)
	servers.Services = deployers.cfg.Services
	serversDir := servers.HostStateDir(servers.Hosts[0])
	if serversDir == deployers.dir {
		t.Fatalf("the server's state dir %s should differ from the deployer's", serversDir)
	}
	before := map[string]string{}
	for _, svc := range []string{"web", "worker"} {
		if got := deployers.running(svc); len(got) == 1 {
			before[svc] = got[0].ID
		} else {
			t.Fatalf("after the deploy %s runs %+v, want one instance", svc, got)
		}
	}
	w, err := watchdog.New(servers, servers.Hosts[0], watchdog.Options{Runtime: deployers.rt,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}

	rep, err := w.Tick(context.Background())
	if !errors.Is(err, watchdog.ErrSpecElsewhere) || rep.NoSpec {
		t.Fatalf("tick with no spec at %s while the deployed services run: NoSpec %v, err %v; want ErrSpecElsewhere",
			spec.Path(serversDir), rep.NoSpec, err)
	}
	for _, want := range []string{spec.Path(serversDir), "web v1", "worker v1", before["web"],
		"hosts[].state_dir", "zero502 deploy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if err := watchdog.TickEach(context.Background(), []*watchdog.Watchdog{w}, func(watchdog.Report, error) {}); err == nil {
		t.Error("TickEach returned nil: the command would exit 0 while the watchdog watches nothing")
	}
	for svc, id := range before {
		if got := deployers.running(svc); len(got) != 1 || got[0].ID != id {
			t.Errorf("after the failed ticks %s runs %+v, want its instance %s untouched", svc, got, id)
		}
	}
	if _, err := os.Stat(spec.Path(serversDir)); !os.IsNotExist(err) {
		t.Errorf("the watchdog wrote a spec at %s (stat: %v)", spec.Path(serversDir), err)
	}

	// A first deploy publishes its spec under the host lock: while the lock is held, the tick is
	// skipped, whatever runs.
	holdWithFlock(t, servers.HostLockPath(servers.Hosts[0]))
	if rep, err := w.Tick(context.Background()); err != nil || !rep.Skipped {
		t.Fatalf("tick under a held host lock: skipped %v, err %v; want skipped and no error", rep.Skipped, err)
	}
}
