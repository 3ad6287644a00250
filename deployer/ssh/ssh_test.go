package ssh

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/trust"
)

func TestSSHTargetsAndRefusals(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{
		"root@127.0.0.1:2222": {"root@127.0.0.1", "2222"},
		"deploy@web-1":        {"deploy@web-1", ""},
		"web-1":               {"web-1", ""},
		"u@[::1]:22":          {"u@::1", "22"},
	} {
		dest, port, err := Target(in)
		if err != nil || dest != want[0] || port != want[1] {
			t.Errorf("Target(%q) = %q %q %v, want %q %q", in, dest, port, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"-oProxyCommand=x", "a b@c", "u@h:port", "", "u@h:0", "u@h:65536", "u@h:99999"} {
		if _, _, err := Target(bad); err == nil {
			t.Errorf("Target(%q): no error", bad)
		}
	}
	if got := ShellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("ShellQuote: %s", got)
	}
}

// No word of the remote command can be read by ssh as an option (ssh reads options after the
// destination too): "--" comes before the destination, and a --remote-binary that starts with
// '-' is refused, naming the flag.
func TestTheRemoteCommandIsNeverAnSSHOption(t *testing.T) {
	cmd, err := Session{Host: "web-1", Target: "root@10.0.0.1:2222", Binary: "/opt/zero502", Args: []string{"host", "look"}}.Command()
	if err != nil {
		t.Fatal(err)
	}
	args := cmd.Args
	if len(args) < 3 || args[len(args)-3] != "--" || args[len(args)-2] != "root@10.0.0.1" || args[len(args)-1] != "/opt/zero502 host look" {
		t.Fatalf("ssh argv %q, want it to end -- root@10.0.0.1 '/opt/zero502 host look'", args)
	}
	_, err = Session{Host: "web-1", Target: "root@10.0.0.1", Binary: "-oProxyCommand=/tmp/x", Args: []string{"host", "look"}}.Command()
	if err == nil || !strings.Contains(err.Error(), `--remote-binary "-oProxyCommand=/tmp/x"`) {
		t.Fatalf("a --remote-binary starting with '-': %v; want a refusal naming the flag", err)
	}
}

// A host's session never gets the deployer's agent or display, whatever the user's ssh config
// asks (ForwardAgent yes under Host *): ssh's own reading of the options the deployer gives it
// (ssh -G, which connects to nothing) says so.
func TestASessionForwardsNeitherTheAgentNorTheDisplay(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host *\n  ForwardAgent yes\n  ForwardX11 yes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(OptsEnv, "-F "+cfg)
	cmd, err := Session{Host: "web-1", Target: "root@10.0.0.1", Binary: "/opt/zero502", Args: []string{"host", "look"}}.Command()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-G"}, cmd.Args[1:]...)
	out, err := exec.Command(cmd.Path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh -G %q: %v\n%s", args, err, out)
	}
	for _, want := range []string{"forwardagent no", "forwardx11 no"} {
		if !strings.Contains(string(out), "\n"+want+"\n") {
			t.Errorf("ssh -G of the session's options lacks %q, under a config that forwards both:\n%s", want, out)
		}
	}
}

// A control socket's path must fit sun_path: under a $TMPDIR too long for one, the sockets go to
// /tmp (a sandbox's TMPDIR made every session fail, reported as unreachable).
func TestControlSocketsFitUnderALongTMPDIR(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	m := NewMux("")
	defer m.Close()
	opts := m.Options("root@10.0.0.1")
	var path string
	for _, o := range opts {
		if p, ok := strings.CutPrefix(o, "ControlPath="); ok {
			path = p
		}
	}
	if path == "" || len(path)+17 >= 108 || strings.HasPrefix(path, long) {
		t.Fatalf("control path %q (%d bytes) under TMPDIR of %d bytes; want one under /tmp that fits sun_path", path, len(path), len(long))
	}
}

// What a host prints is read in bounded lines: a line over the limit is replaced by a note of
// its size, never held whole; the lines around it come through intact.
func TestARemoteLineOverTheLimitIsDropped(t *testing.T) {
	in := "first\r\n" + strings.Repeat("x", 300_000) + "\n" + strings.Repeat("y", 1000) + "\nlast"
	var got []string
	ReadLines(strings.NewReader(in), 100_000, func(b []byte) { got = append(got, string(b)) })
	want := []string{"first", "(a line of 300001 bytes, over the 100000-byte limit, dropped)", strings.Repeat("y", 1000), "last"}
	if len(got) != len(want) {
		t.Fatalf("lines %q, want %d lines", got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %.80q, want %.80q", i, got[i], want[i])
		}
	}
}

// An exit 255 is a session that never logged in only when ssh's own words say so and nothing
// else was printed: a line from the remote command means it ran, whatever ssh said after it.
func TestNeverLoggedInIsSaidOnlyBySSHItself(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		never  bool
	}{
		{"ssh: connect to host 10.0.0.9 port 22: Connection timed out\n", true},
		{"ssh: connect to host 10.0.0.9 port 22: Connection refused\r\n", true},
		{"ssh: Could not resolve hostname web-9: Name or service not known\n", true},
		{"Warning: Permanently added '10.0.0.9' (ED25519) to the list of known hosts.\nroot@10.0.0.9: Permission denied (publickey).\n", true},
		{"Warning: Permanently added '10.0.0.9' (ED25519) to the list of known hosts.\nPermission denied (publickey).\n", true},
		{"Host key verification failed.\n", true},
		{"kex_exchange_identification: read: Connection reset by peer\n", true},
		{"Connection closed by 10.0.0.9 port 22\n", true},
		{"", false},
		{"Timeout, server 10.0.0.9 not responding.\n", false},
		{"Connection to 10.0.0.9 closed by remote host.\n", false},
		{`{"level":"INFO","msg":"drain"}` + "\nssh: connect to host 10.0.0.9 port 22: Connection timed out\n", false},
	} {
		if got := neverLoggedIn(tc.stderr); got != tc.never {
			t.Errorf("neverLoggedIn(%q) = %v, want %v", tc.stderr, got, tc.never)
		}
	}
}

// The ssh client runs as the deploy's user (root in many CIs) and holds its keys: one another
// user could change is refused before it runs, naming it; a trusted one runs by its checked path.
func TestAnSSHClientAnotherUserCouldChangeIsNotRun(t *testing.T) {
	open := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	fake := filepath.Join(open, "ssh")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", open)
	_, err := Command("", "root@10.0.0.1", "true")
	if !errors.Is(err, trust.ErrRefused) || !strings.Contains(err.Error(), "ssh client") || !strings.Contains(err.Error(), "0777") {
		t.Fatalf("ssh on a PATH directory anyone may write: %v; want a refusal naming the ssh client and the mode", err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, err := Command("", "root@10.0.0.1", "true")
	if err != nil || cmd.Path != fake || cmd.Args[0] != "ssh" {
		t.Fatalf("a trusted ssh: %v, path %q, argv[0] %q; want %s run as ssh", err, cmd.Path, cmd.Args[0], fake)
	}
}

// The control sockets carry every session to the lock host (the config stream, the secrets in
// it): their directory is made only below one another user cannot change, for one who could
// rename the 0700 directory out of a $TMPDIR anyone may write and put their own master at the
// socket's name would be handed those sessions. Such a $TMPDIR falls back to /tmp.
func TestControlSocketsAreNotMadeUnderATMPDIRAnyoneMayWrite(t *testing.T) {
	open, err := os.MkdirTemp("", "z5-open-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(open) })
	if err := os.Chmod(open, 0o777); err != nil { // world-writable, not sticky
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", open)
	m := NewMux("")
	defer m.Close()
	var path string
	for _, o := range m.Options("root@10.0.0.1") {
		if p, ok := strings.CutPrefix(o, "ControlPath="); ok {
			path = p
		}
	}
	if strings.HasPrefix(path, open+"/") {
		t.Fatalf("control path %q under TMPDIR %s of mode 0777; want it below a directory only root or this user may write", path, open)
	}
	if path != "" {
		if err := trust.Check(filepath.Dir(path), os.Getuid()); err != nil {
			t.Fatalf("control path %q: its directory fails the trust rule: %v", path, err)
		}
	}
}

// A host or a user that starts with '-' is refused where it is written, naming the value, also
// after "user@": ssh refuses it only once the deploy runs (as an unreachable host), and an ssh
// older than 9.6 hands it on to a ProxyCommand's %h or %r, where it is read as an option.
func TestATargetWhoseHostOrUserStartsWithADashIsRefused(t *testing.T) {
	for _, bad := range []string{"deploy@-oProxyCommand", "deploy@-web-1:2222", "-deploy@web-1", "u@-web"} {
		if dest, port, err := Target(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) || !strings.Contains(err.Error(), "'-'") {
			t.Errorf("Target(%q) = %q %q %v; want a refusal naming it and the leading '-'", bad, dest, port, err)
		}
	}
	if dest, _, err := Target("deploy@web-1"); err != nil || dest != "deploy@web-1" {
		t.Errorf("Target(deploy@web-1) = %q %v", dest, err)
	}
}

// ZERO502_SSH_OPTS is split on spaces: a word of it that is neither an option nor an option's
// value (a key path with a space in it) would be ssh's destination, and the host's own target
// would become a word of the remote command, so the session and its config stream would go to
// another machine. Such a word, a "--", or an option left without its value is refused, naming
// the variable, the word and the rule, before ssh runs.
func TestZERO502SSHOptsThatWouldNameTheDestinationAreRefused(t *testing.T) {
	for opts, word := range map[string]string{
		"-i /keys/my key":        `"key"`,
		"-o BatchMode=yes web-2": `"web-2"`,
		"-F /dev/null -i":        `"-i"`,
		"-v -- -i k":             `"--"`,
	} {
		t.Setenv(OptsEnv, opts)
		cmd, err := Command("", "root@10.0.0.1", "true")
		if err == nil || !strings.Contains(err.Error(), OptsEnv) || !strings.Contains(err.Error(), word) {
			var argv []string
			if cmd != nil {
				argv = cmd.Args
			}
			t.Errorf("%s=%q: %v, ssh %q; want a refusal naming %s and %s", OptsEnv, opts, err, argv, OptsEnv, word)
		}
	}
	for _, opts := range []string{"", "-F /dev/null -i /k -o IdentitiesOnly=yes -oLogLevel=ERROR -vvv -4 -p2222 -J bastion -A", "-i/k -l deploy"} {
		t.Setenv(OptsEnv, opts)
		if _, err := Command("", "root@10.0.0.1", "true"); err != nil {
			t.Errorf("%s=%q: %v; want it taken", OptsEnv, opts, err)
		}
	}
}
