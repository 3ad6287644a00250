package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secret's file (--admin-token-file, --key-file, --alert-webhook-file) passes the check
// secrets.file does (trust.CheckPrivate) before it is read: one group or others may read, or
// another user owns, is refused naming the flag, the file, its mode or owner and the fix; the
// same file at 0600 is read.
func TestASecretFileOthersCouldReadIsRefused(t *testing.T) {
	t.Setenv(lbAdminTokenEnv, "")
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	token := write("token", "s3cret\n", 0o644)
	out, code := lbCheckToken(t, "--admin-token-file", token)
	for _, w := range []string{"lb: --admin-token-file", token, "mode 0644", "chmod 600 " + token, "readable by its owner alone"} {
		if code != 2 || !strings.Contains(out, w) {
			t.Errorf("a 0644 token file: exit %d, want 2 saying %q:\n%s", code, w, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("the refusal shows the token:\n%s", out)
	}
	if err := os.Chmod(token, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := lbCheckToken(t, "--admin-token-file", token); code != 2 || strings.Contains(out, "refused") ||
		strings.Contains(out, noToken) || !strings.Contains(out, "--health-path") {
		t.Errorf("the same file at 0600: exit %d, want only the --health-path error:\n%s", code, out)
	}

	for _, tc := range []struct {
		src  secretSource
		text string
	}{
		{meshKeySource, "0123456789abcdef0123456789abcdef\n"},
		{alertWebhookSource("edgepick survey"), "https://hooks.example.com/T0/s3cret\n"},
		{edgeAdminTokenSource, "s3cret\n"},
	} {
		for _, mode := range []os.FileMode{0o640, 0o604, 0o666} {
			file := write(tc.src.fileFlag, tc.text, mode)
			_, err := tc.src.readFile(file)
			if err == nil || !strings.Contains(err.Error(), "--"+tc.src.fileFlag+` "`+file+`"`) ||
				!strings.Contains(err.Error(), fmt.Sprintf("mode %04o", mode)) ||
				!strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("--%s at %04o: %v; want refused naming the flag, the file, the mode and chmod 600", tc.src.fileFlag, mode, err)
			}
		}
		file := write(tc.src.fileFlag, tc.text, 0o600)
		if got, err := tc.src.readFile(file); err != nil || got != strings.TrimSpace(tc.text) {
			t.Errorf("--%s at 0600: %q, %v; want its first line", tc.src.fileFlag, got, err)
		}
		if os.Getuid() == 0 { // root can give the file to another user: not this user's, refused
			if err := os.Chown(file, 12345, 12345); err != nil {
				t.Fatal(err)
			}
			_, err := tc.src.readFile(file)
			if err == nil || !strings.Contains(err.Error(), "--"+tc.src.fileFlag) || !strings.Contains(err.Error(), "owned by uid 12345") ||
				!strings.Contains(err.Error(), "chown") {
				t.Errorf("--%s owned by uid 12345: %v; want refused naming the owner and chown", tc.src.fileFlag, err)
			}
			if err := os.Chown(file, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
}
