package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every error is printed as one line "zero502 <command path>: <message>", the path said once,
// whether the message carried the full path (requireFlags, flag errors), the path less the
// root's name (agent: …), both, or nothing.
func TestErrorLineSaysTheCommandPathOnce(t *testing.T) {
	root := &cobra.Command{Use: "zero502"}
	mesh := &cobra.Command{Use: "mesh"}
	serve := &cobra.Command{Use: "serve"}
	root.AddCommand(mesh)
	mesh.AddCommand(serve)
	for _, c := range []struct {
		cmd  *cobra.Command
		err  error
		want string
	}{
		{serve, errors.New("--quorum 1: must be 2 or more"), "zero502 mesh serve: --quorum 1: must be 2 or more"},
		{serve, errors.New("zero502 mesh serve: --name is required (see --help)"), "zero502 mesh serve: --name is required (see --help)"},
		{serve, errors.New("mesh serve: --source: bad"), "zero502 mesh serve: --source: bad"},
		{serve, fmt.Errorf("mesh serve: %w", errors.New("mesh serve: --key-file: empty")), "zero502 mesh serve: --key-file: empty"},
		{serve, exitCode(2, errors.New("serve: not this one")), "zero502 mesh serve: serve: not this one"},
		{mesh, exitCode(2, errors.New(`unknown command "x" for zero502 mesh`)), `zero502 mesh: unknown command "x" for zero502 mesh`},
		{root, errors.New("unknown flag: --bogus"), "zero502: unknown flag: --bogus"},
		{nil, errors.New("boom"), "zero502: boom"},
		{serve, exitCode(1, nil), ""},
	} {
		if got := errorLine(c.cmd, c.err); got != c.want {
			t.Errorf("errorLine(%v): %q, want %q", c.err, got, c.want)
		}
	}
}

// The real binary prints a failing subcommand's error on stderr as exactly one line with one
// prefix: "zero502 dns add: --name is required", not "zero502: zero502 dns add: …".
func TestBinaryPrintsOneErrorPrefix(t *testing.T) {
	bin := buildZero502(t)
	for _, c := range []struct {
		args   []string
		prefix string
		want   string
	}{
		{[]string{"dns", "add", "192.0.2.1"}, "zero502 dns add: ", "zero502 dns add: --name is required (see --help)"},
		{[]string{"agent", "--addrs", "127.0.0.1:1", "--server-name", "localhost", "--state", "s.json", "--budget", "0s"},
			"zero502 agent: ", "zero502 agent: --budget 0s: must be more than 0, e.g. 3s"},
		{[]string{"deploy", "--bogus"}, "zero502 deploy: ", "zero502 deploy: unknown flag: --bogus (see zero502 deploy --help)"},
		{[]string{"bogus"}, "zero502: ", `zero502: unknown command "bogus" for zero502 (see zero502 --help)`},
	} {
		cmd := exec.Command(bin, c.args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("zero502 %s: %v, want exit 2", strings.Join(c.args, " "), err)
		}
		line := strings.TrimSuffix(stderr.String(), "\n")
		if line != c.want || strings.Count(line, c.prefix) != 1 || strings.Contains(line, "\n") || stdout.Len() != 0 {
			t.Errorf("zero502 %s: stdout %q, stderr %q; want nothing on stdout and the one line %q",
				strings.Join(c.args, " "), stdout.String(), stderr.String(), c.want)
		}
	}
}
