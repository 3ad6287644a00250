package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/secrets"
)

// secretConfig is examples/local.yaml whose web service has the secret DB_PASSWORD, holding value
// (unresolved when value is "").
func secretConfig(t *testing.T, value string) *config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "examples", "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Services[0].Secrets = []string{"DB_PASSWORD"}
	if value != "" {
		cfg.SecretValues = map[string]secrets.Value{"DB_PASSWORD": secrets.Value(value)}
	}
	return cfg
}

// A published spec records a secret's digest, never its value; the value sits beside it, 0600,
// and a read gives it back to the runtime in the service's environment.
func TestASecretIsPublishedBesideTheSpecNeverInIt(t *testing.T) {
	cfg := secretConfig(t, "hunter2")
	p := Path(t.TempDir())
	s := Render(cfg, cfg.Hosts[0], "v1", "/bin/zero502")
	if err := Publish(p, s); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	digest := secrets.Digest("DB_PASSWORD", "hunter2")
	if strings.Contains(string(data), "hunter2") || !strings.Contains(string(data), digest) {
		t.Fatalf("spec.json holds the value, or no digest:\n%s", data)
	}
	fi, err := os.Stat(SecretsPath(p))
	if err != nil || fi.Mode().Perm() != PrivateMode {
		t.Fatalf("secrets file %s: %v, mode %v; want %v", SecretsPath(p), err, fi.Mode().Perm(), PrivateMode)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	web, _ := got.Service("web")
	if env := web.Environment(); env["DB_PASSWORD"] != "hunter2" {
		t.Fatalf("the read spec's environment lacks the secret: %v", web.SecretEnv)
	}
	if !Same(got, s) {
		t.Error("the spec read back is not the same as the one published")
	}
	if Same(s, Render(secretConfig(t, "hunter3"), cfg.Hosts[0], "v1", "/bin/zero502")) {
		t.Error("a changed secret left the spec the same: it would not be rolled out")
	}
}

// A spec whose secret's value is gone or changed beside it is corrupt, so nothing runs with a
// wrong value; a secret nobody resolved is never published; a spec with no secrets left drops
// the file.
func TestASecretsValueMustMatchItsDigest(t *testing.T) {
	cfg := secretConfig(t, "hunter2")
	p := Path(t.TempDir())
	if err := Publish(p, Render(cfg, cfg.Hosts[0], "v1", "/bin/zero502")); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivate(SecretsPath(p), []byte(`{"`+secrets.Digest("DB_PASSWORD", "hunter2")+`":"other"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "secret DB_PASSWORD") || strings.Contains(err.Error(), "other") {
		t.Errorf("a changed value: %v, want ErrCorrupt naming the secret and not the value", err)
	}
	if err := os.Chmod(SecretsPath(p), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "mode 0644") {
		t.Errorf("a 0644 secrets file: %v, want refused naming the mode", err)
	}
	if err := os.Remove(SecretsPath(p)); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a missing secrets file: %v, want ErrCorrupt", err)
	}

	unresolved := secretConfig(t, "")
	q := Path(t.TempDir())
	if err := Publish(q, Render(unresolved, unresolved.Hosts[0], "v1", "/bin/zero502")); err == nil || !strings.Contains(err.Error(), "secret DB_PASSWORD has no value") {
		t.Errorf("publish of an unresolved secret: %v, want refused", err)
	}
	if _, err := os.Stat(q); !os.IsNotExist(err) {
		t.Errorf("the refused publish wrote %s", q)
	}

	if err := Publish(p, Render(cfg, cfg.Hosts[0], "v1", "/bin/zero502")); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err != nil {
		t.Fatalf("republished: %v", err)
	}
	cfg.Services[0].Secrets = nil
	if err := Publish(p, Render(cfg, cfg.Hosts[0], "v2", "/bin/zero502")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(SecretsPath(p)); !os.IsNotExist(err) {
		t.Errorf("a spec without secrets left %s behind: %v", SecretsPath(p), err)
	}
}

// A reader without the host lock (status) that reads a spec just before a publish replaces it,
// and its values just after the publish dropped the old ones, reads the new spec again: it never
// takes the publish for a corrupt spec.
func TestAReadRacingAPublishReadsTheNewSpecNotACorruptOne(t *testing.T) {
	p := Path(t.TempDir())
	cfg := secretConfig(t, "one")
	if err := Publish(p, Render(cfg, cfg.Hosts[0], "v1", "/bin/zero502")); err != nil {
		t.Fatal(err)
	}
	next := secretConfig(t, "two")
	published := false
	afterSpecRead = func() {
		if !published {
			published = true // between this read of v1 and the read of its value: v2 lands
			if err := Publish(p, Render(next, next.Hosts[0], "v2", "/bin/zero502")); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { afterSpecRead = nil }()
	got, err := Read(p)
	if err != nil {
		t.Fatalf("a read racing a publish: %v", err)
	}
	web, _ := got.Service("web")
	if got.Version != "v2" || web.Environment()["DB_PASSWORD"] != "two" {
		t.Fatalf("read %s with DB_PASSWORD %q, want v2 with its own value", got.Version, web.Environment()["DB_PASSWORD"])
	}
}
