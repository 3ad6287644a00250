// Package ssh is the deployer's transport to a fleet's hosts: the system ssh client (so
// ~/.ssh/config, agents and ProxyJump apply) running `zero502 ARGS…` there, in batch mode
// without a terminal, forwarding neither the agent nor the display, with keep-alives, the options of ZERO502_SSH_OPTS first. A Session writes
// its input (the config stream) on the remote command's stdin and keeps stdin open: its end
// tells the host the deployer is gone, and the host rolls back and exits. Each line the host
// prints goes to the session's Line. A Mux reuses one connection per host for a whole deploy
// (OpenSSH control masters). What the lines mean (events, reports, looks) is the deployer's.
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
// Each word must be an option or an option's value (envOpts).
const OptsEnv = "ZERO502_SSH_OPTS"

var sshRE = regexp.MustCompile(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$`)

// Target splits hosts[].ssh "user@host[:port]" into ssh's destination and port ("" none).
func Target(s string) (dest, port string, err error) {
	m := sshRE.FindStringSubmatch(s)
	if strings.HasPrefix(s, "-") || m != nil && strings.Contains(s, "@-") {
		// ssh refuses it only when it runs, and one older than 9.6 hands it to a ProxyCommand's
		// %h or %r, where it reads as an option
		return "", "", fmt.Errorf("%q: neither the user nor the host may start with '-'; write it as [user@]host[:port], "+
			"e.g. deploy@web-1", s)
	}
	if m == nil {
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
	args, err := envOpts()
	if err != nil {
		return nil, err
	}
	args = append(args, opts...)
	// -T: never a terminal, whatever an ssh config asks (RequestTTY force): on one the host would
	// echo its stdin (the config stream and its secrets) back on stdout, and never see it end.
	// Nor the deployer's agent or display, whatever an ssh config says (ForwardAgent yes under
	// Host *): a host's step needs neither, and a host that has it could use the deployer's keys
	// while the step runs (ZERO502_SSH_OPTS, first, can still ask for them).
	args = append(args, "-T", "-o", "ForwardAgent=no", "-o", "ForwardX11=no", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
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

// withValue are the ssh(1) options that take a value, in the next word unless it follows the
// letter in the same word (-i KEY, -iKEY).
const withValue = "BbcDEeFIiJLlmOoPpQRSWw"

// envOpts are the words of ZERO502_SSH_OPTS, each an option or the value of the one before: a
// word that is neither (a key path with a space, split in two) would be ssh's destination, and
// the host's own would become a word of the remote command, so the session, config stream and
// secrets would go to whatever that word names.
func envOpts() ([]string, error) {
	words := strings.Fields(os.Getenv(OptsEnv))
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" || !strings.HasPrefix(w, "-") {
			return nil, fmt.Errorf("%s=%q: the word %q is neither an ssh option nor an option's value, so ssh would take it "+
				"for the host to reach: the words are split on spaces, so no value may hold one (keep such a path in "+
				"~/.ssh/config instead)", OptsEnv, os.Getenv(OptsEnv), w)
		}
		for j := 1; j < len(w); j++ {
			if !strings.ContainsRune(withValue, rune(w[j])) {
				continue
			}
			if j == len(w)-1 { // its value is the next word
				if i++; i == len(words) {
					return nil, fmt.Errorf("%s=%q: the option %q at its end takes a value and has none (ssh would take "+
						"the deployer's own next option for it)", OptsEnv, os.Getenv(OptsEnv), w)
				}
			}
			break
		}
	}
	return words, nil
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
