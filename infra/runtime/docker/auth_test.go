package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes a docker config.json holding cfg into a new directory and returns its path.
func writeConfig(t *testing.T, cfg string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestImageRegistryOfAReference(t *testing.T) {
	for ref, want := range map[string][2]string{
		"127.0.0.1:5000/shop/web:v9":                                      {"127.0.0.1:5000", "127.0.0.1:5000"},
		"registry.example.com/shop/web@sha256:" + strings.Repeat("a", 64): {"registry.example.com", "registry.example.com"},
		"zero502/app:v1":     {"docker.io", DockerHubServer},
		"busybox":            {"docker.io", DockerHubServer},
		"localhost:5000/web": {"localhost:5000", "localhost:5000"},
	} {
		host, server, err := RegistryOf(ref)
		if err != nil || host != want[0] || server != want[1] {
			t.Errorf("RegistryOf(%q) = %q, %q, %v; want %q, %q", ref, host, server, err, want[0], want[1])
		}
	}
	_, _, err := RegistryOf("Shop/Web:v1")
	if err == nil || !strings.Contains(err.Error(), `"Shop/Web:v1"`) || !strings.Contains(err.Error(), "repository") {
		t.Fatalf("RegistryOf of an upper-case name = %v, want an error naming it and the form", err)
	}
}

func TestImageCredentialsFromTheAuthsOfTheDockerConfig(t *testing.T) {
	ctx := context.Background()
	path := writeConfig(t, `{"auths": {
		"127.0.0.1:5000": {"auth": "`+b64("deploy:pa:ss")+`"},
		"https://registry.example.com/v1/": {"username": "ci", "password": "tok"},
		"https://index.docker.io/v1/": {"auth": "`+b64("hubuser:hubpass")+`"},
		"idp.example.com": {"identitytoken": "refresh-me"}
	}}`)
	for server, want := range map[string][2]string{
		"127.0.0.1:5000":       {"deploy", "pa:ss"},
		"registry.example.com": {"ci", "tok"},
		DockerHubServer:        {"hubuser", "hubpass"},
		"127.0.0.1:5001":       {"", ""}, // unknown: anonymous
	} {
		ac, err := Credentials(ctx, path, server)
		if err != nil || ac.Username != want[0] || ac.Password != want[1] || ac.ServerAddress != server {
			t.Errorf("Credentials(%s) = %+v, %v; want %s/%s", server, ac, err, want[0], want[1])
		}
	}
	if ac, err := Credentials(ctx, path, "idp.example.com"); err != nil || ac.IdentityToken != "refresh-me" {
		t.Errorf("Credentials(idp.example.com) = %+v, %v; want the identity token", ac, err)
	}
	if ac, err := Credentials(ctx, filepath.Join(t.TempDir(), "config.json"), "127.0.0.1:5000"); err != nil || ac.Username != "" {
		t.Errorf("Credentials with no config file = %+v, %v; want anonymous", ac, err)
	}
}

func TestImageCredentialsRefuseABrokenDockerConfig(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct{ cfg, want string }{
		"bad json":   {`{"auths": `, "config.json"},
		"not base64": {`{"auths": {"127.0.0.1:5000": {"auth": "!!"}}}`, `auths["127.0.0.1:5000"].auth: not base64`},
		"no colon":   {`{"auths": {"127.0.0.1:5000": {"auth": "` + b64("deploy") + `"}}}`, "user:password"},
	} {
		path := writeConfig(t, tc.cfg)
		_, err := Credentials(ctx, path, "127.0.0.1:5000")
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Credentials = %v, want an error naming %s and %q", name, err, path, tc.want)
		}
	}
}

// credentialHelper installs docker-credential-<name> on PATH: a shell script that speaks the
// helper protocol, answering get for server with user and secret and "credentials not found"
// for any other server.
func credentialHelper(t *testing.T, name, server, user, secret string) {
	t.Helper()
	dir := t.TempDir()
	answer, _ := json.Marshal(map[string]string{"ServerURL": server, "Username": user, "Secret": secret})
	script := "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread -r server\n" +
		"if [ \"$server\" = '" + server + "' ]; then echo '" + string(answer) + "'; exit 0; fi\n" +
		"echo 'credentials not found in native keychain'; exit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "docker-credential-"+name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestImageCredentialsFromACredentialHelper(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the helper script")
	}
	ctx := context.Background()
	credentialHelper(t, "zt", "127.0.0.1:5000", "deploy", "from-helper")
	credentialHelper(t, "ztstore", "registry.example.com", "<token>", "identity")

	// credHelpers picks the helper per registry; credsStore serves every other one; the auths
	// entry is only a marker then, as docker login leaves it.
	path := writeConfig(t, `{"auths": {"127.0.0.1:5000": {}}, "credsStore": "ztstore",
		"credHelpers": {"127.0.0.1:5000": "zt"}}`)
	ac, err := Credentials(ctx, path, "127.0.0.1:5000")
	if err != nil || ac.Username != "deploy" || ac.Password != "from-helper" {
		t.Fatalf("Credentials via credHelpers = %+v, %v; want deploy/from-helper", ac, err)
	}
	ac, err = Credentials(ctx, path, "registry.example.com")
	if err != nil || ac.IdentityToken != "identity" || ac.Username != "" {
		t.Fatalf("Credentials via credsStore = %+v, %v; want the identity token (username <token>)", ac, err)
	}
	ac, err = Credentials(ctx, path, "127.0.0.1:5001")
	if err != nil || ac.Username != "" || ac.IdentityToken != "" {
		t.Fatalf("Credentials for a registry the store lacks = %+v, %v; want anonymous", ac, err)
	}

	path = writeConfig(t, `{"credsStore": "not-installed-zt"}`)
	_, err = Credentials(ctx, path, "127.0.0.1:5000")
	for _, want := range []string{path, `credsStore "not-installed-zt"`, "install docker-credential-not-installed-zt"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Credentials with a missing helper = %v, want an error with %q", err, want)
		}
	}
}

func TestImageProgressStreamIsReadToItsEndAndItsErrorSurfaces(t *testing.T) {
	// What the engine sends when a pull fails after it started: 200, then the error in the stream.
	stream := `{"status":"Pulling from shop/web","id":"v9"}
{"status":"Pulling fs layer","progressDetail":{},"id":"a1"}
{"status":"Downloading","progressDetail":{"current":10,"total":100},"progress":"[=>  ]","id":"a1"}
{"status":"Downloading","progressDetail":{"current":14,"total":100},"progress":"[=>  ]","id":"a1"}
{"status":"Downloading","progressDetail":{"current":50,"total":100},"progress":"[==> ]","id":"a1"}
{"errorDetail":{"message":"unknown blob"},"error":"unknown blob"}
{"status":"trailing line the reader must still consume"}
`
	r := strings.NewReader(stream)
	var out strings.Builder
	err := readStream(r, &out, nil)
	if err == nil || err.Error() != "unknown blob" {
		t.Fatalf("readStream = %v, want the stream's error \"unknown blob\"", err)
	}
	if r.Len() != 0 {
		t.Fatalf("readStream left %d bytes unread", r.Len())
	}
	want := "v9: Pulling from shop/web\na1: Pulling fs layer\na1: Downloading 10%\na1: Downloading 50%\ntrailing line the reader must still consume\n"
	if out.String() != want {
		t.Fatalf("progress = %q, want one line per status change and per tenth of a transfer: %q", out.String(), want)
	}
	if err := readStream(strings.NewReader(`{"status":"ok"`), &out, nil); err == nil {
		t.Fatal("readStream accepted a cut-off stream")
	}
}

// The docker config names the program that runs for credentials, so neither it nor the helper
// may be a file another user could change (a root watchdog's heal pulls too).
func TestImageCredentialsRefuseAHelperOrConfigAnotherUserMayChange(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the helper script")
	}
	ctx := context.Background()
	credentialHelper(t, "ztopen", "127.0.0.1:5000", "deploy", "from-helper")
	dir := strings.SplitN(os.Getenv("PATH"), string(os.PathListSeparator), 2)[0] // credentialHelper's
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, `{"credsStore": "ztopen"}`)
	if ac, err := Credentials(ctx, path, "127.0.0.1:5000"); err == nil || !strings.Contains(err.Error(), "mode 0777") || ac.Password != "" {
		t.Fatalf("Credentials through a helper in a 0777 directory = %+v, %v; want refused, naming the directory's mode", ac, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if ac, err := Credentials(ctx, path, "127.0.0.1:5000"); err != nil || ac.Password != "from-helper" {
		t.Fatalf("Credentials through a trusted helper = %+v, %v", ac, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Credentials(ctx, path, "127.0.0.1:5000"); err == nil || !strings.Contains(err.Error(), "mode 0666") {
		t.Fatalf("Credentials from a 0666 docker config: %v; want refused, naming its mode", err)
	}
}

// A docker config whose entry for the registry holds a credential (auth, password, identity
// token) is a secrets file: one others may read is refused, naming it, its mode and chmod 600,
// as secrets.file is. An entry that leaves the credential to a helper needs no such care.
func TestImageCredentialsRefuseADockerConfigOthersMayReadWhenItHoldsTheCredential(t *testing.T) {
	ctx := context.Background()
	for name, entry := range map[string]string{
		"auth":          `{"auth": "` + b64("ci:s3cret") + `"}`,
		"password":      `{"username": "ci", "password": "s3cret"}`,
		"identitytoken": `{"identitytoken": "s3cret"}`,
	} {
		path := writeConfig(t, `{"auths": {"registry.example.com": `+entry+`}}`)
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		ac, err := Credentials(ctx, path, "registry.example.com")
		for _, want := range []string{path, "mode 0644", "chmod 600 " + path, `auths["registry.example.com"]`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: Credentials from a 0644 config = %+v, %v\nwant a refusal with %q", name, ac, err, want)
			}
		}
		if ac.Password != "" || ac.IdentityToken != "" {
			t.Errorf("%s: Credentials from a 0644 config gave the credential: %+v", name, ac)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if ac, err := Credentials(ctx, path, "registry.example.com"); err != nil || (ac.Password != "s3cret" && ac.IdentityToken != "s3cret") {
			t.Errorf("%s: Credentials from a 0600 config = %+v, %v; want the credential", name, ac, err)
		}
	}

	// Nothing secret in the entry used: a readable config is fine.
	path := writeConfig(t, `{"auths": {"127.0.0.1:5000": {"auth": "`+b64("ci:s3cret")+`"}, "registry.example.com": {}}}`)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"registry.example.com", "127.0.0.1:5001"} {
		if ac, err := Credentials(ctx, path, server); err != nil || ac.Username != "" || ac.Password != "" {
			t.Errorf("Credentials(%s) from a 0644 config with no credential for it = %+v, %v; want anonymous", server, ac, err)
		}
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the helper script")
	}
	credentialHelper(t, "ztreadable", "127.0.0.1:5000", "deploy", "from-helper")
	path = writeConfig(t, `{"auths": {"127.0.0.1:5000": {}}, "credsStore": "ztreadable"}`)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if ac, err := Credentials(ctx, path, "127.0.0.1:5000"); err != nil || ac.Password != "from-helper" {
		t.Errorf("Credentials through a helper named by a 0644 config = %+v, %v; want the helper's answer", ac, err)
	}
}
