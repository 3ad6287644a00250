package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/infra/secrets"
	"github.com/zero502/zero502/infra/spec"
)

// zero502 host look run by hand prints no secret's digest (a digest in a terminal log or a
// ticket would let anyone test guesses of a weak secret offline), only that it is set; the
// deployer, whose config stream is framed, gets the digests it compares hosts by.
func TestHostLookByHandPrintsNoSecretsDigest(t *testing.T) {
	path, cfg := noneFleetIn(t, t.TempDir())
	cfg.Services[0].Secrets = []string{"DB_PASSWORD"}
	cfg.SecretValues = map[string]secrets.Value{"DB_PASSWORD": "hunter2"}
	h := cfg.Hosts[0]
	if err := os.MkdirAll(cfg.HostStateDir(h), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := spec.Publish(spec.Path(cfg.HostStateDir(h)), spec.Render(cfg, h, "v1", "/bin/true")); err != nil {
		t.Fatal(err)
	}
	digest := secrets.Digest("DB_PASSWORD", "hunter2")
	look := func(stdin string, configArg string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code, err := execute(strings.NewReader(stdin), &out, &errOut, "host", "look", "--config", configArg, "--host", h.Name, "--version", "v1")
		if code != 0 {
			t.Fatalf("host look --config %s: exit %d, %v %s", configArg, code, err, errOut.String())
		}
		return out.String()
	}

	byHand := look("", path)
	if strings.Contains(byHand, digest) || !strings.Contains(byHand, deployer.DigestHidden) {
		t.Errorf("host look by hand: %s\nwant DB_PASSWORD %q, not its digest %s", byHand, deployer.DigestHidden, digest)
	}
	conf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	framed := look(string(conf)+"\n"+deployer.ConfigEnd+"\n", "-")
	if !strings.Contains(framed, digest) {
		t.Errorf("host look for the deployer (framed config): %s\nwant the digest %s, which status compares across hosts", framed, digest)
	}
}
