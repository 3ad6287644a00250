// Package ssh is the deployer's transport to a fleet's hosts: the system ssh client (so
// ~/.ssh/config, agents and ProxyJump apply) running `zero502 ARGS…` there, in batch mode with
// keep-alives, the options of ZERO502_SSH_OPTS first. A Session writes its input (the config
// stream) on the remote command's stdin and keeps stdin open: its end tells the host the
// deployer is gone, and the host rolls back and exits. Each line the host prints goes to the
// session's Line. A Mux reuses one connection per host for a whole deploy (OpenSSH control
// masters). What the lines mean (events, reports, looks) is the deployer's.
package ssh

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zero502/zero502/infra/trust"
)

// OptsEnv holds extra ssh options, split on spaces, placed before the deployer's own (ssh
// keeps the first value of an option): ZERO502_SSH_OPTS="-i KEY -o UserKnownHostsFile=FILE".
const OptsEnv = "ZERO502_SSH_OPTS"

var sshRE = regexp.MustCompile(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$`)

// Target splits hosts[].ssh "user@host[:port]" into ssh's destination and port ("" none).
func Target(s string) (dest, port string, err error) {
	m := sshRE.FindStringSubmatch(s)
	if m == nil || strings.HasPrefix(s, "-") {
		return "", "", fmt.Errorf("%q: must be [user@]host[:port], e.g. deploy@10.0.1.12 or deploy@web-1:2222 "+
			"(a name from ~/.ssh/config works too)", s)
	}
	if n, err := strconv.Atoi(m[2]); m[2] != "" && (err != nil || n < 1 || n > 65535) {
		return "", "", fmt.Errorf("%q: port %s is not a port number from 1 to 65535", s, m[2])
	}
	dest = strings.TrimSuffix(s, ":"+m[2])
	if m[2] == "" {
		dest = s
	}
	return strings.NewReplacer("[", "", "]", "").Replace(dest), m[2], nil
}

// ShellQuote quotes s for the remote login shell.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Command is the ssh client sshBin (default: ssh on PATH) running the shell command remote
// at target user@host[:port], in batch mode (no password prompts), with the options of
// ZERO502_SSH_OPTS first.
func Command(sshBin, target, remote string) (*exec.Cmd, error) {
	return Cmd(sshBin, target, nil, remote)
}

// Cmd is ssh to target with ZERO502_SSH_OPTS, then opts, then the deployer's own options,
// then "--", the destination and tail (a remote command, or nothing after -O exit in opts): ssh
// reads options after the destination too, and "--" ends them, so no word of the remote command
// can be taken for one (-oProxyCommand=… would run here).
func Cmd(sshBin, target string, opts []string, tail ...string) (*exec.Cmd, error) {
	dest, port, err := Target(target)
	if err != nil {
		return nil, err
	}
	args := strings.Fields(os.Getenv(OptsEnv))
	args = append(args, opts...)
	args = append(args, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
	if port != "" {
		args = append(args, "-p", port)
	}
	args = append(args, "--", dest)
	args = append(args, tail...)
	if sshBin == "" {
		sshBin = "ssh"
	}
	// It runs as the deploy's user, often root in CI: an ssh client another user could change
	// would be theirs to run (and would hold the session's keys).
	prog, err := trust.Program(sshBin, os.Getuid())
	if err != nil {
		return nil, fmt.Errorf("the ssh client %s: %w", sshBin, err)
	}
	c := exec.Command(prog, args...)
	c.Args[0] = sshBin
	ownGroup(c)
	return c, nil
}

// ConnectionFailed is the exit status of ssh(1) when it could not reach or log in to the
// host (a remote command's own status is passed through).
const ConnectionFailed = 255

// ErrUnreachable is wrapped when ssh could not reach a host at all: nothing ran there.
var ErrUnreachable = errors.New("unreachable over ssh")

// ErrNeverLoggedIn is wrapped, beside ErrUnreachable, when ssh's own words say it never logged in
// to the host (neverLoggedIn): no remote command ran, not even one that starts at once. Without
// it, an exit 255 may also be a session lost after its command began.
var ErrNeverLoggedIn = errors.New("ssh never logged in")

// beforeLogin are the starts of the lines ssh(1) prints when it stops before logging in: it
// could not connect or resolve the name, the server closed or reset the connection before the
// key exchange or the login, the host key or the login was refused.
var beforeLogin = []string{"ssh: connect to host ", "ssh: Could not resolve hostname ", "kex_exchange_identification: ",
	"Connection closed by ", "Connection reset by ", "Host key verification failed.", "Permission denied ("}

// loginRefused is ssh's line for a refused login, which newer clients begin with user@host.
var loginRefused = regexp.MustCompile(`^\S+@\S+: Permission denied \(`)

// neverLoggedIn says whether ssh's stderr (its tail), from a session that exited 255, shows that
// ssh never logged in: a line of beforeLogin, and nothing but ssh's own warnings besides it. Any
// other line may be the remote command's, which then ran.
func neverLoggedIn(stderr string) bool {
	said := false
	for line := range strings.Lines(stderr) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "Warning: "):
		case slices.ContainsFunc(beforeLogin, func(p string) bool { return strings.HasPrefix(line, p) }), loginRefused.MatchString(line):
			said = true
		default:
			return false
		}
	}
	return said
}
