package main

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// The tests' one way to run the real command tree in process: execute, and runCLI and runCLIIn
// on it for the tests that read one output.

// execute runs the real command tree in process on args, with stdin as its input (nil: none),
// its output to out and its errors to errOut. It returns the exit code the run stands for (0,
// an exitCode's, else 1) and Execute's error.
func execute(stdin io.Reader, out, errOut io.Writer, args ...string) (int, error) {
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(errOut)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetArgs(args)
	err := root.Execute()
	var ex *exitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ex):
		return ex.code, err
	}
	return 1, err
}

// runCLI runs the real command tree in process and returns its output and exit code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runCLIIn(t, nil, args...)
}

// runCLIIn is runCLI with stdin as the commands' input: their output and errors in one text,
// the error's message last (none for an exit code alone), and the exit code.
func runCLIIn(t *testing.T, stdin io.Reader, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code, err := execute(stdin, &out, &out, args...)
	var ex *exitError
	switch {
	case errors.As(err, &ex):
		if ex.err != nil {
			out.WriteString(ex.err.Error())
		}
	case err != nil:
		out.WriteString(err.Error())
	}
	return out.String(), code
}
