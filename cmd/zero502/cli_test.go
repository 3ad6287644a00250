package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// The tests' one way to run the real command tree in process: execute, and runCLI and runCLIIn
// on it for the tests that read one output.

// execute runs the real command tree in process on args, with stdin as its input (nil: none),
// its output to out and its errors to errOut. It returns the exit code the run stands for (0,
// an exitCode's, else 1) and Execute's error.
func execute(stdin io.Reader, out, errOut io.Writer, args ...string) (int, error) {
	_, code, err := executeC(stdin, out, errOut, args...)
	return code, err
}

// executeC is execute that also returns the command that ran (for errorLine).
func executeC(stdin io.Reader, out, errOut io.Writer, args ...string) (*cobra.Command, int, error) {
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(errOut)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return cmd, 0, nil
	}
	return cmd, exitStatus(err), err
}

// runCLI runs the real command tree in process and returns its output and exit code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runCLIIn(t, nil, args...)
}

// runCLIIn is runCLI with stdin as the commands' input: their output and errors in one text,
// the error's line last as main prints it (errorLine; none for an exit code alone), and the
// exit code.
func runCLIIn(t *testing.T, stdin io.Reader, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd, code, err := executeC(stdin, &out, &out, args...)
	if err != nil {
		out.WriteString(errorLine(cmd, err))
	}
	return out.String(), code
}
