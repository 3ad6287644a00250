package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// secretSource is where one command takes one secret from (an admin API's bearer token, the
// mesh's shared key), the same way for every command: a flag holding it, a flag naming a file
// whose first line holds it, or an environment variable. The file and the variable keep the
// secret out of ps and /proc/PID/cmdline; the value flag, when a command offers one at all, is
// for the lab.
type secretSource struct {
	cmd      string // the command, first in every message, e.g. "lb", "edge forward"
	what     string // what the secret is, e.g. "the admin token"
	flag     string // the flag holding the secret itself; "" when the command offers none
	fileFlag string // the flag naming the file
	env      string // the environment variable
}

// The secrets zero502 reads, each from one secretSource.
var (
	// lbAdminTokenSource is the LB's admin token; lb-sync sends the same one.
	lbAdminTokenSource = secretSource{cmd: "lb", what: "the admin token", flag: "admin-token",
		fileFlag: "admin-token-file", env: lbAdminTokenEnv}
	// lbSyncAdminTokenSource is the token mesh lb-sync sends to the LB's admin API: the LB's own
	// variable, and a file, never argv.
	lbSyncAdminTokenSource = secretSource{cmd: "mesh lb-sync", what: "the LB's admin token",
		fileFlag: "admin-token-file", env: lbAdminTokenEnv}
	// edgeAdminTokenSource is the edge forwarder's admin token.
	edgeAdminTokenSource = secretSource{cmd: "edge forward", what: "the admin token", flag: "admin-token",
		fileFlag: "admin-token-file", env: edgeAdminTokenEnv}
	// meshKeySource is the mesh's shared key, signing every bulletin: a file or the
	// environment only.
	meshKeySource = secretSource{cmd: "mesh serve", what: "the mesh key", fileFlag: "key-file", env: meshKeyEnv}
)

// alertWebhookSource is the alert webhook URL of cmd (mesh serve, edgepick survey): its path is
// often the secret that lets anyone post to the channel.
func alertWebhookSource(cmd string) secretSource {
	return secretSource{cmd: cmd, what: "the alert webhook URL", flag: "alert-webhook",
		fileFlag: "alert-webhook-file", env: alertWebhookEnv}
}

// The environment variables that carry secrets (registered in config.EnvNotConfig).
const (
	alertWebhookEnv   = "ZERO502_ALERT_WEBHOOK"
	lbAdminTokenEnv   = "ZERO502_LB_ADMIN_TOKEN"
	edgeAdminTokenEnv = "ZERO502_EDGE_ADMIN_TOKEN"
	meshKeyEnv        = "ZERO502_MESH_KEY"
)

// register adds the file flag (and the value flag, if the source has one) to fl, with usage
// naming the other places the secret may come from.
func (s secretSource) register(fl *pflag.FlagSet, usage string) {
	fl.String(s.fileFlag, "", fmt.Sprintf("file whose first line is %s (or $%s)", s.what, s.env))
	if s.flag != "" {
		fl.String(s.flag, "", fmt.Sprintf("%s; visible in ps: prefer --%s or $%s", usage, s.fileFlag, s.env))
	}
}

// resolve takes the secret from, in order, the value flag, the file flag (its first line,
// trimmed) and the environment variable (trimmed); ok is false when none of them gives one.
// Both flags at once is an error, and so is a file that cannot be read or whose first line is
// empty.
func (s secretSource) resolve(fl *pflag.FlagSet, getenv func(string) string) (secret string, ok bool, err error) {
	valueGiven := s.flag != "" && fl.Changed(s.flag)
	switch {
	case valueGiven && fl.Changed(s.fileFlag):
		return "", false, fmt.Errorf("%s: --%s and --%s both given: use one (the file keeps %s out of ps)", s.cmd, s.flag, s.fileFlag, s.what)
	case valueGiven:
		v, err := fl.GetString(s.flag)
		if err == nil && strings.TrimSpace(v) == "" {
			err = fmt.Errorf("%s: --%s is empty: give %s, or leave the flag out", s.cmd, s.flag, s.what)
		}
		return v, err == nil, err
	case fl.Changed(s.fileFlag):
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

// readFile is the first line of file, trimmed; an empty one is an error.
func (s secretSource) readFile(file string) (string, error) {
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
