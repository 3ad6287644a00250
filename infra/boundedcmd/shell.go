package boundedcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/zero502/zero502/infra/trust"
)

// A local command zero502 runs through sh -c (the alert command, the mesh's check command)
// is held to the trust rule as a hook written ["sh", "-c", command] is (trust.Command): sh, and
// every word of command that names an existing file (the script the shell runs), must be files
// only root or this user can change. It runs without zero502's secrets in its environment
// (ChildEnv): it needs none of them, and whatever it runs could otherwise sign the mesh's
// bulletins or post to the webhook.

// SecretEnv lists the environment variables through which zero502's commands take a secret (the
// mesh key, the alert webhook URL, the LB's and the edge's admin tokens; see config.EnvNotConfig;
// and the override of the config's one secret key, balancer.admin_token, which deploy, status and
// maintenance send to the LB).
func SecretEnv() []string {
	return []string{"ZERO502_MESH_KEY", "ZERO502_ALERT_WEBHOOK", "ZERO502_LB_ADMIN_TOKEN", "ZERO502_EDGE_ADMIN_TOKEN",
		"ZERO502_BALANCER_ADMIN_TOKEN"}
}

// ChildEnv is environ (os.Environ()'s NAME=value lines) without the variables of SecretEnv: the
// environment of a command zero502 runs that needs none of its secrets (a shell command, a hook,
// secrets.command). environ is not changed.
func ChildEnv(environ []string) []string {
	secret := SecretEnv()
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(secret, name)
	})
}

// ShellProgram is the shell to run command with (sh -c command): its real path, once
// trust.Command holds sh and every word of command that names an existing file. flag names the
// command in a refusal (--check-command), which says the command, trust's reason (the file, its
// owner or mode, and what to change) and the rule.
func ShellProgram(flag, command string) (string, error) {
	argv := append([]string{"sh", "-c", command}, shellWords(command)...)
	prog, err := trust.Command(argv, "", os.Getuid())
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return "", fmt.Errorf("%s %q: it runs through sh -c: %w; put sh on PATH", flag, command, err)
	case err != nil:
		return "", fmt.Errorf("%s %q: %w", flag, command, err)
	}
	return prog, nil
}

// ShellCommand is the command that runs command through sh -c within ctx, once ShellProgram holds
// it to the trust rule (checked at each run: a file may have changed since the start), with
// ChildEnv's environment.
func ShellCommand(ctx context.Context, flag, command string) (*exec.Cmd, error) {
	prog, err := ShellProgram(flag, command)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, prog, "-c", command)
	cmd.Args[0] = "sh" // the file checked runs, under the name it was given
	cmd.Env = ChildEnv(os.Environ())
	return cmd, nil
}

// shellWords are the words of a shell command, split at blanks and shell operators, with their
// quotes removed: what may name a file the shell runs or reads. A path with a blank in it is not
// found (name the script alone, or keep it in a directory without one); a word naming a file the
// command only reads is held to the rule too, as an argument of trust.Command is.
func shellWords(command string) []string {
	f := strings.FieldsFunc(command, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()<>`", r) })
	for i, w := range f {
		f[i] = strings.Trim(w, `"'`)
	}
	return f
}
