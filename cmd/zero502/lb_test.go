package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lbCheckToken runs `zero502 lb` with a non-loopback admin address and one more invalid flag,
// so it stops at validation: the output says whether a token arrived (no "set an admin token"
// complaint) without binding anything.
func lbCheckToken(t *testing.T, extra ...string) (string, int) {
	t.Helper()
	args := append([]string{"lb", "--admin", "192.0.2.1:9", "--health-path", "no-slash"}, extra...)
	return runCLI(t, append(args, "0", "127.0.0.1:1")...)
}

const noToken = "set an admin token"

func TestLBAdminTokenFromFileAndEnvironment(t *testing.T) {
	t.Setenv(lbAdminTokenEnv, "")
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	if err := os.WriteFile(good, []byte("  s3cret  \nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := lbCheckToken(t)
	if code != 2 || !strings.Contains(out, noToken) || !strings.Contains(out, "--health-path") {
		t.Fatalf("without a token: exit %d, %q; want 2 naming the missing token", code, out)
	}
	out, code = lbCheckToken(t, "--admin-token-file", good)
	if code != 2 || strings.Contains(out, noToken) || !strings.Contains(out, "--health-path") {
		t.Fatalf("token from the file: exit %d, %q; want only the --health-path error", code, out)
	}
	if tok, err := lbAdminTokenSource.readFile(good); err != nil || tok != "s3cret" {
		t.Fatalf("readFile: %q, %v; want the first line trimmed", tok, err)
	}
	t.Setenv(lbAdminTokenEnv, "from-env")
	out, code = lbCheckToken(t)
	if code != 2 || strings.Contains(out, noToken) {
		t.Fatalf("token from $%s: exit %d, %q; want no token complaint", lbAdminTokenEnv, code, out)
	}
}

func TestLBAdminTokenFileErrors(t *testing.T) {
	t.Setenv(lbAdminTokenEnv, "")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n  \nlater\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"unreadable", []string{"--admin-token-file", missing}, []string{"--admin-token-file", missing, "cannot read"}},
		{"empty first line", []string{"--admin-token-file", empty}, []string{"--admin-token-file", empty, "first line is empty"}},
		// (--health-path no-slash stops it at validation were the flag taken)
		{"the token in argv", []string{"--admin-token", "s3cret-in-argv", "--health-path", "no-slash"}, []string{"unknown flag: --admin-token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, append(append([]string{"lb"}, tc.args...), "0", "127.0.0.1:1")...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %q", code, out)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("output %q does not name %q", out, w)
				}
			}
		})
	}
}

func TestLBCapFlagsReachTheSettings(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--max-conns", "--max-conns 0: must be at least 1"},
		{"--max-slow-bodies-per-ip", "--max-slow-bodies-per-ip 0: must be at least 1"},
	} {
		out, code := runCLI(t, "lb", tc.flag, "0", "0", "127.0.0.1:1")
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%s 0: exit %d, %q; want 2 and %q", tc.flag, code, out, tc.want)
		}
	}
}

func TestLBBackendsFromMeshNeedsTheAdminListener(t *testing.T) {
	out, code := runCLI(t, "lb", "--backends-from-mesh", "http://127.0.0.1:7001", "0", "127.0.0.1:1")
	if code != 2 || !strings.Contains(out, "--backends-from-mesh") || !strings.Contains(out, "--admin") {
		t.Fatalf("lb --backends-from-mesh without an admin listener: exit %d %q, want 2 naming --admin", code, out)
	}
	// Off loopback the route is taken only signed with the mesh key: without one the LB does not
	// start, naming the flag that gives it.
	out, code = runCLI(t, "lb", "--admin", "127.0.0.1:0", "--backends-from-mesh", "http://10.0.0.5:7946", "0", "127.0.0.1:1")
	if code != 2 || !strings.Contains(out, "--backends-from-mesh http://10.0.0.5:7946 is not on loopback") || !strings.Contains(out, "--mesh-key-file FILE") {
		t.Fatalf("lb --backends-from-mesh off loopback without a key: exit %d %q, want 2 naming --mesh-key-file", code, out)
	}
}
