package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// balancer.admin_token is a secret: a config file holding it must be readable by its owner
// alone. One that others may read is refused naming the key, the file, its mode and the fixes,
// without the token; at 0600 it loads; and with the token in the environment instead, the file
// may be world-readable (the LB's unit reads it under DynamicUser).
func TestAnAdminTokenInAFileOthersCanReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(yaml), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}
	const token = "s3cret-admin-token"
	open := write("open.yaml", "balancer:\n  admin_token: "+token+"\n", 0o644)
	_, err := Load(open)
	if err == nil {
		t.Fatalf("a 0644 config holding balancer.admin_token loaded; want it refused")
	}
	for _, want := range []string{"config " + open, "balancer.admin_token", "mode 0644", "chmod 600", adminTokenEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("refusal shows the token: %v", err)
	}
	if _, err := Load(write("private.yaml", "balancer:\n  admin_token: "+token+"\n", 0o600)); err != nil {
		t.Errorf("a 0600 config holding the token: %v", err)
	}
	if _, err := Load(write("plain.yaml", "balancer:\n  interval: 2s\n", 0o644)); err != nil {
		t.Errorf("a 0644 config without a token: %v", err)
	}
	t.Setenv(adminTokenEnv, token)
	c, err := Load(write("env.yaml", "balancer:\n  interval: 2s\n", 0o644))
	if err != nil {
		t.Fatalf("a 0644 config with the token in $%s: %v", adminTokenEnv, err)
	}
	if c.Balancer.AdminToken != token {
		t.Errorf("token from $%s: %q", adminTokenEnv, c.Balancer.AdminToken)
	}
	// The environment's token does not make a token in the file any less exposed.
	if _, err := Load(open); err == nil {
		t.Errorf("a 0644 config holding a token loaded because $%s is set too; want it refused", adminTokenEnv)
	}
}

// A token the YAML reads as a number (all digits) is refused as not text, naming the key and the
// rule, and never showing the token: the refusal goes to a terminal, a CI log or the journal.
func TestAnAdminTokenThatIsNotTextIsRefusedWithoutShowingIt(t *testing.T) {
	const token = "739105528461"
	path := filepath.Join(t.TempDir(), "zero502.yaml")
	if err := os.WriteFile(path, []byte("balancer:\n  admin_token: "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil {
		t.Fatal("a numeric balancer.admin_token loaded; want it refused as not text")
	}
	for _, want := range []string{"balancer.admin_token", "must be text"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("refusal shows the token: %v", err)
	}
}

// The file's keys are read as viper reads them: in any case (Balancer:, ADMIN_TOKEN:) and as a
// dotted key (balancer.admin_token:). A token written any of those ways is the token the LB and
// the deployer use, so a file holding it that others may read is refused all the same.
func TestAnAdminTokenWrittenAnotherWayIsKeptPrivateToo(t *testing.T) {
	const token = "s3cret-admin-token"
	for _, body := range []string{
		"Balancer:\n  Admin_Token: " + token + "\n",
		"BALANCER:\n  ADMIN_TOKEN: " + token + "\n",
		"balancer.admin_token: " + token + "\n",
	} {
		path := filepath.Join(t.TempDir(), "zero502.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err == nil {
			t.Errorf("a 0644 config holding %q loaded with balancer.admin_token %q; want it refused", body, c.Balancer.AdminToken)
			continue
		}
		for _, want := range []string{"balancer.admin_token", "mode 0644"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: refusal %q does not say %q", body, err, want)
			}
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("refusal shows the token: %v", err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := Load(path); err != nil || c.Balancer.AdminToken != token {
			t.Errorf("%q at 0600: token %v, error %v; want it loaded", body, c, err)
		}
	}
}
