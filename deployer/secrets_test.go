package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/secrets"
	"github.com/zero502/zero502/infra/spec"
)

// secretFleet is a 2-host fleet whose web service has the secret DB_PASSWORD from a secrets.file
// (returned) and writes what it sees in it to <dir>/seen-<host>-<version> before it execs the app.
func secretFleet(t *testing.T, s *sshd) (f *fleet, cfg *config.Config, file string) {
	f = newFleet(t, 2)
	cfg = f.load(f.config("fleet.yaml", defaultValues()))
	if s != nil { // host-a over ssh
		cfg.Hosts[0].SSH, cfg.Hosts[0].Address = s.target(), "127.0.0.1"
	}
	web := &cfg.Services[0]
	web.Secrets = []string{"DB_PASSWORD"}
	seen := filepath.Join(f.dir, "seen-{host}-{version}")
	web.Command = append([]string{"sh", "-c", `printf %s "$DB_PASSWORD" > ` + seen + `; exec "$0" "$@"`}, web.Command...)
	file = filepath.Join(t.TempDir(), "secrets.env")
	setSecret(t, file, "s3cret-one")
	cfg.Secrets.File = file
	cfg = f.load(f.write("fleet.yaml", cfg))
	f.startLB(filepath.Join(f.dir, "fleet.yaml"))
	return f, cfg, file
}

func setSecret(t *testing.T, file, value string) {
	t.Helper()
	if err := os.WriteFile(file, []byte("DB_PASSWORD="+value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// deploySecret deploys version with a fresh copy of cfg (the secrets are found anew, as by a new
// `zero502 deploy`) and returns the events and the report as JSON, both as text.
func deploySecret(t *testing.T, f *fleet, path, version string) (*report.Report, string, error) {
	t.Helper()
	var ev eventLog
	rep, err := f.deployer(f.load(path), &ev, Options{RemoteBinary: bin}).Deploy(context.Background(), version)
	js, jerr := json.Marshal(rep)
	if jerr != nil {
		t.Fatal(jerr)
	}
	evs, jerr := json.Marshal(ev.events)
	if jerr != nil {
		t.Fatal(jerr)
	}
	return rep, ev.String() + string(evs) + string(js), err
}

// A service's secret reaches its environment, found at deploy time in secrets.file; it is in no
// spec, event, report, argv or log. Host-a is reached over ssh: it gets the value on the step's
// stdin after the config, never on the command line, and host look gets none. A changed value
// redeploys the same version, an unchanged one does not; a secrets file others may read refuses
// the deploy before anything changes.
func TestASecretReachesTheServiceAndNothingElse(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f, cfg, file := secretFleet(t, s)
	if cfg.Hosts[0].SSH == "" || cfg.Hosts[1].SSH != "" {
		t.Fatal("want host-a over ssh, host-b local")
	}
	path := filepath.Join(f.dir, "fleet.yaml")
	seen := func(host, version string) string {
		data, _ := os.ReadFile(filepath.Join(f.dir, "seen-"+host+"-"+version))
		return string(data)
	}
	leaks := func(what, secret, text string) {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the secret's value:\n%s", what, text)
		}
	}

	_, out, err := deploySecret(t, f, path, "v1")
	if err != nil {
		t.Fatalf("deploy v1: %v\n%s", err, out)
	}
	if !strings.Contains(out, "secrets found: DB_PASSWORD from secrets.file "+file) {
		t.Errorf("no event says where DB_PASSWORD came from:\n%s", out)
	}
	leaks("the events and the report", "s3cret-one", out)
	for i := range 2 {
		h := hostName(i)
		if got := seen(h, "v1"); got != "s3cret-one" {
			t.Errorf("%s's service saw DB_PASSWORD=%q, want the secret", h, got)
		}
		data, _ := os.ReadFile(spec.Path(f.stateDir(i)))
		leaks(h+"'s spec.json", "s3cret-one", string(data))
		_ = filepath.WalkDir(f.stateDir(i), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && p != spec.SecretsPath(spec.Path(f.stateDir(i))) {
				if data, err := os.ReadFile(p); err == nil {
					leaks(p, "s3cret-one", string(data))
				}
			}
			return nil
		})
		insts, err := f.runtimes[h].List(context.Background(), runtime.Filter{Service: "web"})
		if err != nil || len(insts) == 0 {
			t.Fatalf("%s: no web instance (%v)", h, err)
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%s/cmdline", strings.TrimPrefix(insts[0].ID, "pid:")))
		if err != nil {
			t.Fatal(err)
		}
		leaks(h+"'s service argv", "s3cret-one", string(cmdline))
	}

	d := New(f.load(path), Options{RemoteBinary: bin})
	d.cfg.SecretValues = map[string]secrets.Value{"DB_PASSWORD": "s3cret-one"}
	cmd, err := d.session(cfg.Hosts[0], []string{"host", "step", "--config", "-", "--host", "host-a", "--version", "v1"}, nil, nil).Command()
	if err != nil {
		t.Fatal(err)
	}
	leaks("the ssh command line", "s3cret", strings.Join(cmd.Args, " "))
	if got := d.secretsFor([]string{"host", "look"}); got != nil {
		t.Errorf("host look is sent the secrets: %v", got)
	}
	if got := d.secretsFor([]string{"host", "step"}); got["DB_PASSWORD"] != "s3cret-one" {
		t.Errorf("host step is not sent the secrets: %v", got)
	}

	// The same value: nothing to roll out.
	rep, out, err := deploySecret(t, f, path, "v1")
	if err != nil || rep.Hosts[0].Outcome != report.OutcomeUnchanged {
		t.Fatalf("redeploy with the same secret: %v, host-a %q; want unchanged\n%s", err, rep.Hosts[0].Outcome, out)
	}
	// A rotated value under the same version is a changed spec: rolled out.
	setSecret(t, file, "s3cret-two")
	rep, out, err = deploySecret(t, f, path, "v1")
	if err != nil || rep.Hosts[0].Outcome != report.OutcomeDeployed {
		t.Fatalf("redeploy with a rotated secret: %v, host-a %q; want deployed\n%s", err, rep.Hosts[0].Outcome, out)
	}
	if got := seen("host-b", "v1"); got != "s3cret-two" {
		t.Errorf("after the rotation host-b's service saw %q, want the new value", got)
	}

	// Status, host-a's read over ssh (host look): each host's secrets by name, the same value on
	// both, and neither value nor digest shown.
	st, err := Status(context.Background(), f.load(path), Options{RemoteBinary: bin,
		Runtime: func(h config.Host) (Runtime, error) { return f.runtimes[h.Name], nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, hs := range st.Hosts {
		if len(hs.Services) == 0 {
			t.Fatalf("status of %s has no services: %v", hs.Host, hs.Problems)
		}
		if got := hs.Services[0].Secrets["DB_PASSWORD"]; got != SecretSame {
			t.Errorf("status of %s shows secrets %v: want DB_PASSWORD %q", hs.Host, hs.Services[0].Secrets, SecretSame)
		}
	}
	if js, _ := json.Marshal(st); strings.Contains(string(js), "s3cret") || strings.Contains(string(js), secrets.Digest("DB_PASSWORD", "s3cret-two")) {
		t.Errorf("status shows a secret's value or digest: %s", js)
	}

	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, err = deploySecret(t, f, path, "v2")
	var refused *refusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "mode 0644") || strings.Contains(out, "publish") {
		t.Fatalf("deploy with a 0644 secrets file: %v; want refused before any host changed\n%s", err, out)
	}
	if v := f.versions(); v["host-a"] != "v1" || v["host-b"] != "v1" {
		t.Errorf("after the refusal hosts run %v, want v1", v)
	}
}

// A first deploy rolled back to nothing leaves nothing of it on the host: no spec, and no
// secret values beside it either (they stayed, 0600, until the next publish).
func TestAFreshHostRolledBackKeepsNoSecretValues(t *testing.T) {
	t.Parallel()
	f, cfg, _ := secretFleet(t, nil)
	cfg.Services[0].Command = append(cfg.Services[0].Command, "--start-unhealthy")
	cfg.Rollout.HealthyDeadline = 2 * time.Second
	path := f.write("fleet.yaml", cfg)
	rep, _, err := deploySecret(t, f, path, "v1")
	if err == nil {
		t.Fatal("deploy of a never-healthy v1 succeeded")
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "" {
		t.Fatalf("host-a: %s, runs %q; want rolled back to nothing", a.Outcome, a.Running)
	}
	left, _ := filepath.Glob(filepath.Join(f.stateDir(0), "*secrets*"))
	if _, err := spec.Read(spec.Path(f.stateDir(0))); !errors.Is(err, spec.ErrNone) || len(left) > 0 {
		t.Fatalf("host-a rolled back to nothing keeps its spec (%v) or secret values %v", err, left)
	}
}

// A wiped host (no published spec, nothing running) that kept a previous spec and its secret
// values from before loses both at its next first deploy: no stale values stay behind.
func TestAWipedHostsLeftoverPreviousSecretsGo(t *testing.T) {
	t.Parallel()
	f, cfg, _ := secretFleet(t, nil)
	path := f.write("fleet.yaml", cfg)
	prev := filepath.Join(f.stateDir(0), previousFileName)
	if err := os.MkdirAll(f.stateDir(0), 0o750); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{prev, spec.SecretsPath(prev)} {
		if err := os.WriteFile(p, []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, out, err := deploySecret(t, f, path, "v1"); err != nil {
		t.Fatalf("first deploy of the wiped host: %v\n%s", err, out)
	}
	for _, p := range []string{prev, spec.SecretsPath(prev)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the wiped host's first deploy (%v): a leftover of before the wipe", p, err)
		}
	}
}
