package main

import (
	"os/exec"
	"regexp"
	"testing"
)

// A short command never runs the garbage collector: the packages' init (compose-go's JSON
// Schema drafts, the AWS SDK's schemas) allocates past the collector's first goal, and package
// startgc holds it back until main has run a second. Every host's look and step and every
// process-runtime instance start pays this, so a dependency that allocates before startgc's
// init, or a restore that comes at once, shows here as a collection in gctrace.
func TestAShortCommandRunsNoGarbageCollection(t *testing.T) {
	bin := buildZero502(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(cmd.Environ(), "GODEBUG=gctrace=1", "GOGC=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zero502 version: %v\n%s", err, out)
	}
	if gc := regexp.MustCompile(`(?m)^gc \d+ @.*$`).FindAllString(string(out), -1); len(gc) > 0 {
		t.Errorf("zero502 version ran %d garbage collections, want none:\n%s", len(gc), out)
	}
}
