package configdoc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// infraDir and docsConfig are package config and the generated reference, from this package.
var (
	infraDir   = filepath.Join("..", "..", "infra", "config")
	docsConfig = filepath.Join("..", "..", "docs", "config.md")
)

func TestDocsConfigIsUpToDate(t *testing.T) {
	want, err := Generate(infraDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(docsConfig)
	if err != nil {
		t.Fatalf("%v: run `%s` (from the repository's root) to write it", err, Command)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		g, w := "(end of file)", "(end of file)"
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("docs/config.md is stale against package config's config types, doc comments and defaults.yaml: "+
				"run `%s` (from the repository's root).\nFirst difference, line %d:\n  file:      %s\n  generated: %s", Command, i+1, g, w)
		}
	}
}

func TestKnownKeysHaveTheirDefaultsFromDefaultsYAML(t *testing.T) {
	ref, err := Load(infraDir)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(ref.Markdown())
	for _, c := range []struct{ key, typ, def, docHas string }{
		{"balancer.interval", "duration", "`5s`", "health checks"},
		{"drain.window", "duration", "`15s`", "I1"},
		{"watchdog.heal_after", "int", "`4`", "I5"},
		{"balancer.tls.acme.directory", "string", "`https://acme-v02.api.letsencrypt.org/directory`", "ACME directory"},
		{"balancer.admins", "list of string", "`[]`", "admin APIs"},
		{"secrets.file", "string", "`\"\"`", "dotenv"},
		{"hooks.pre_deploy.timeout", "duration", "`30s`", "Timeout"},
		// A key of a list item: defaults.yaml has services: [], so no default of its own; the
		// doc comment says how it is filled in.
		{"services[].health.path", "string", noDefault, "Default: health_path, else balancer.health_path"},
		{"balancer.tls.certificates[].key", "string", noDefault, "private key"},
	} {
		r, ok := ref.Row(c.key)
		if !ok {
			t.Errorf("%s: no row", c.key)
			continue
		}
		if r.Type != c.typ || r.Default != c.def || !strings.Contains(r.Doc, c.docHas) {
			t.Errorf("%s: type %q default %q doc %q; want type %q default %q, a doc with %q", c.key, r.Type, r.Default, r.Doc, c.typ, c.def, c.docHas)
		}
		line := "| `" + c.key + "` | " + c.typ + " | " + c.def + " | "
		if !strings.Contains(doc, line) {
			t.Errorf("the Markdown has no line starting %q", line)
		}
	}
	// The squashed BalancerNumbers sit at balancer's level; SecretValues (mapstructure:"-") is no key.
	if _, ok := ref.Row("balancer.balancernumbers.interval"); ok {
		t.Error("the squashed BalancerNumbers got a key of their own")
	}
	if strings.Contains(doc, "secret_values") || strings.Contains(doc, "SecretValues") {
		t.Error("a field tagged mapstructure:\"-\" is in the reference")
	}
	for _, want := range []string{"`ZERO502_` + the key", "ZERO502_DRAIN_WINDOW=20s", "`ZERO502_SSH_OPTS`", "### services_from", "run `go generate ./infra/config`"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the reference does not say %q", want)
		}
	}
}

const miniDefaults = "a: 1\nsub:\n  b: 2s\n"

func TestAFieldWithoutADocCommentIsAnError(t *testing.T) {
	src := `package config

import "time"

type Config struct {
	// A is documented.
	A   int ` + "`mapstructure:\"a\"`" + `
	Sub Sub ` + "`mapstructure:\"sub\"`" + `
}

// Sub is a section.
type Sub struct {
	B time.Duration ` + "`mapstructure:\"b\"`" + `
}
`
	_, err := fromSource(map[string][]byte{"config.go": []byte(src)}, []byte(miniDefaults))
	if err == nil {
		t.Fatal("a config without doc comments was accepted")
	}
	for _, want := range []string{"without a doc comment", "Config.Sub (sub)", "Sub.B (sub.b)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "Config.A") {
		t.Errorf("error %q names the documented field", err)
	}

	documented := strings.Replace(strings.Replace(src, "\tSub Sub", "\t// Sub is a section.\n\tSub Sub", 1),
		"\tB time.Duration", "\t// B is a duration.\n\tB time.Duration", 1)
	ref, err := fromSource(map[string][]byte{"config.go": []byte(documented)}, []byte(miniDefaults))
	if err != nil {
		t.Fatalf("documented: %v", err)
	}
	if r, _ := ref.Row("sub.b"); r.Type != "duration" || r.Default != "`2s`" || r.Doc != "B is a duration." {
		t.Errorf("sub.b: %+v", r)
	}

	_, err = fromSource(map[string][]byte{"config.go": []byte(documented)}, []byte(miniDefaults+"  c: 3\n"))
	if err == nil || !strings.Contains(err.Error(), "sub.c") {
		t.Errorf("a defaults key no field declares: %v; want an error naming sub.c", err)
	}
}
