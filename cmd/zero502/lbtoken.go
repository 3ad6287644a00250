package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// lbAdminTokenEnv is the environment variable that carries the LB's admin token, so it need not
// appear in the process list the way a flag value does.
const lbAdminTokenEnv = "ZERO502_LB_ADMIN_TOKEN"

// lbAdminToken resolves the admin token from, in order, --admin-token, --admin-token-file (its
// first line, trimmed) and ZERO502_LB_ADMIN_TOKEN; ok is false when none of them gives one (the
// config's balancer.admin_token then stays).
func lbAdminToken(fl *pflag.FlagSet, flagToken, file string, getenv func(string) string) (token string, ok bool, err error) {
	switch {
	case fl.Changed("admin-token") && fl.Changed("admin-token-file"):
		return "", false, errors.New("lb: --admin-token and --admin-token-file both given: use one (the file keeps the token out of ps)")
	case fl.Changed("admin-token"):
		return flagToken, true, nil
	case fl.Changed("admin-token-file"):
		t, err := readTokenFile(file)
		return t, err == nil, err
	}
	if t := strings.TrimSpace(getenv(lbAdminTokenEnv)); t != "" {
		return t, true, nil
	}
	return "", false, nil
}

// readTokenFile is the first line of file, trimmed; an empty one is an error.
func readTokenFile(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("lb: --admin-token-file %q: cannot read it: %w; give a readable file whose first line is the token", file, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	t := strings.TrimSpace(line)
	if t == "" {
		return "", fmt.Errorf("lb: --admin-token-file %q: the first line is empty: it must hold the admin token", file)
	}
	return t, nil
}
