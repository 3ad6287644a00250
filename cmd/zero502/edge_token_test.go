//go:build unix

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// adminStatus GETs the edge's /admin/upstreams with token as its bearer ("" none): the status
// code, or 0 when nothing answers yet.
func adminStatus(admin, token string) int {
	req, err := http.NewRequest(http.MethodGet, "http://"+admin+"/admin/upstreams", nil)
	if err != nil {
		return 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The edge takes its admin token from --admin-token-file and from $ZERO502_EDGE_ADMIN_TOKEN,
// the LB's two ways, so it need not be in argv: the real binary's admin API then wants exactly
// that token.
func TestEdgeAdminTokenFromFileAndEnvironment(t *testing.T) {
	bin := buildZero502(t)
	file := filepath.Join(t.TempDir(), "edge-token")
	if err := os.WriteFile(file, []byte(" from-file \nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env, token string
		args             []string
	}{
		{"file", "", "from-file", []string{"--admin-token-file", file}},
		{"environment", "from-env", "from-env", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(edgeAdminTokenEnv, tc.env)
			admin := freeAddr(t)
			args := append([]string{"edge", "forward", "--listen", freeAddr(t), "--origin", freeAddr(t), "--admin", admin}, tc.args...)
			d := startDaemon(t, bin, args...)
			d.until("the admin API answering its token", 20*time.Second, func() bool { return adminStatus(admin, tc.token) == http.StatusOK })
			if got := adminStatus(admin, ""); got != http.StatusUnauthorized {
				t.Errorf("no token: %d, want 401", got)
			}
			if got := adminStatus(admin, "wrong"); got != http.StatusUnauthorized {
				t.Errorf("a wrong token: %d, want 401", got)
			}
			for _, arg := range d.cmd.Args {
				if strings.Contains(arg, tc.token) {
					t.Errorf("the token is in argv: %q", d.cmd.Args)
				}
			}
			d.sigterm()
			d.exitsZero(30 * time.Second)
		})
	}
}

// Off loopback without a token the edge refuses to start, naming flags and a variable that
// exist; the file's errors name the flag and the file.
func TestEdgeAdminTokenErrorsNameFlagsThatExist(t *testing.T) {
	t.Setenv(edgeAdminTokenEnv, "")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"edge", "forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443"}
	out, code := runCLI(t, append(base, "--admin", "0.0.0.0:9104")...)
	if code != 2 {
		t.Fatalf("off loopback without a token: exit %d, want 2\n%s", code, out)
	}
	for _, w := range []string{"--admin-token-file", edgeAdminTokenEnv} {
		if !strings.Contains(out, w) {
			t.Errorf("the message does not name %s:\n%s", w, out)
		}
	}
	cmd := newEdgeForwardCmd()
	if cmd.Flags().Lookup("admin-token-file") == nil {
		t.Error("the message names --admin-token-file, which edge forward does not have")
	}
	// No flag holds the token itself (argv is in ps), and the message offers none.
	if cmd.Flags().Lookup("admin-token") != nil || strings.Contains(strings.ReplaceAll(out, "--admin-token-file", ""), "--admin-token") {
		t.Errorf("edge forward offers --admin-token, a token in argv:\n%s", out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unreadable file", []string{"--admin-token-file", filepath.Join(dir, "missing")}, []string{"edge forward: --admin-token-file", "cannot read"}},
		{"empty first line", []string{"--admin-token-file", empty}, []string{"--admin-token-file", "first line is empty"}},
		// (--loops -1 stops it at validation were the flag taken)
		{"the token in argv", []string{"--admin-token", "s3cret-in-argv", "--loops", "-1"}, []string{"unknown flag: --admin-token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, append(base, tc.args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}
