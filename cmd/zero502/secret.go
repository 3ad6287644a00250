package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zero502/zero502/infra/trust"
)

// secretSource is where one command takes one secret from (an admin API's bearer token, the
// mesh's shared key, an alert webhook URL), the same way for every command: a flag naming a file
// whose first line holds it, or an environment variable. Never a flag holding the secret itself:
// argv is in ps and /proc/PID/cmdline for every user, and a SIGHUP upgrade re-executes it.
type secretSource struct {
	cmd      string // the command, first in every message, e.g. "lb", "edge forward"
	what     string // what the secret is, e.g. "the admin token"
	fileFlag string // the flag naming the file
	env      string // the environment variable
}

// The secrets zero502 reads, each from one secretSource.
var (
	// lbAdminTokenSource is the LB's admin token; lb-sync sends the same one.
	lbAdminTokenSource = secretSource{cmd: "lb", what: "the admin token", fileFlag: "admin-token-file", env: lbAdminTokenEnv}
	// lbSyncAdminTokenSource is the token mesh lb-sync sends to the LB's admin API: the LB's own
	// variable, and a file, never argv.
	lbSyncAdminTokenSource = secretSource{cmd: "mesh lb-sync", what: "the LB's admin token",
		fileFlag: "admin-token-file", env: lbAdminTokenEnv}
	// edgeAdminTokenSource is the edge forwarder's admin token.
	edgeAdminTokenSource = secretSource{cmd: "edge forward", what: "the admin token", fileFlag: "admin-token-file", env: edgeAdminTokenEnv}
	// meshKeySource is the mesh's shared key, signing every bulletin: a file or the
	// environment only.
	meshKeySource = secretSource{cmd: "mesh serve", what: "the mesh key", fileFlag: "key-file", env: meshKeyEnv}
	// lbMeshKeySource is the mesh key of `lb --backends-from-mesh`, which checks the route's
	// signature with it; its flag says which key (the LB has TLS keys too).
	lbMeshKeySource = secretSource{cmd: "lb", what: "the mesh key", fileFlag: "mesh-key-file", env: meshKeyEnv}
)

// alertWebhookSource is the alert webhook URL of cmd (mesh serve, edgepick survey): its path is
// often the secret that lets anyone post to the channel.
func alertWebhookSource(cmd string) secretSource {
	return secretSource{cmd: cmd, what: "the alert webhook URL", fileFlag: "alert-webhook-file", env: alertWebhookEnv}
}

// The environment variables that carry secrets (registered in config.EnvNotConfig).
const (
	alertWebhookEnv   = "ZERO502_ALERT_WEBHOOK"
	lbAdminTokenEnv   = "ZERO502_LB_ADMIN_TOKEN"
	edgeAdminTokenEnv = "ZERO502_EDGE_ADMIN_TOKEN"
	meshKeyEnv        = "ZERO502_MESH_KEY"
)

// register adds the file flag to fl; usage, when not "", says what the secret is for.
func (s secretSource) register(fl *pflag.FlagSet, usage string) {
	if usage != "" {
		usage += ": "
	}
	fl.String(s.fileFlag, "", fmt.Sprintf("%sfile whose first line is %s, mode 0600 (or $%s)", usage, s.what, s.env))
}

// resolve takes the secret from the file flag (its first line, trimmed) or else the environment
// variable (trimmed); ok is false when neither gives one. A file another user could read or
// change, one that cannot be read, or one whose first line is empty is an error.
func (s secretSource) resolve(fl *pflag.FlagSet, getenv func(string) string) (secret string, ok bool, err error) {
	if fl.Changed(s.fileFlag) {
		file, err := fl.GetString(s.fileFlag)
		if err != nil {
			return "", false, err
		}
		t, err := s.readFile(file)
		return t, err == nil, err
	}
	if t := strings.TrimSpace(getenv(s.env)); t != "" {
		return t, true, nil
	}
	return "", false, nil
}

// readFile is the first line of file, trimmed, once file passes trust.CheckPrivate (as
// secrets.file does): owned by this user or root, no permission for group or others, below
// directories no one else can write. An empty first line is an error.
func (s secretSource) readFile(file string) (string, error) {
	if err := trust.CheckPrivate(file, os.Getuid()); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%s: --%s %q: cannot read it: %w; give a readable file whose first line is %s", s.cmd, s.fileFlag, file, err, s.what)
		}
		return "", fmt.Errorf("%s: --%s %q: refused: %w (a file holding %s must be owned by this user, uid %d, or root, "+
			"readable by its owner alone, mode 0600, below directories no one else can write)", s.cmd, s.fileFlag, file, err, s.what, os.Getuid())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: --%s %q: cannot read it: %w; give a readable file whose first line is %s", s.cmd, s.fileFlag, file, err, s.what)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	t := strings.TrimSpace(line)
	if t == "" {
		return "", fmt.Errorf("%s: --%s %q: the first line is empty: it must hold %s", s.cmd, s.fileFlag, file, s.what)
	}
	return t, nil
}
