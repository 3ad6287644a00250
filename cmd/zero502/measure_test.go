package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The --json series keeps a point per --bucket: a bucket finer than the load's pace (1ms) is
// refused before any request (exit 2, naming the flag, the value and the rule), not taken until
// the points fill the memory (--bucket 100ns for 100ms already holds half a gigabyte).
func TestMeasureRefusesABucketFinerThanTheLoadsPace(t *testing.T) {
	for _, bucket := range []time.Duration{time.Nanosecond, 999 * time.Microsecond} {
		out, code := runCLI(t, "measure", "http://127.0.0.1:1", "--rate", "1", "--duration", "1ms", "--bucket", bucket.String())
		if code != 2 || !strings.Contains(out, "bucket "+bucket.String()+": must be at least 1ms") {
			t.Errorf("measure --bucket %s: exit %d, output %q; want exit 2 naming the bucket and the rule", bucket, code, out)
		}
	}
	// 1ms is taken (the load runs: in 1ms at 1/s it sends nothing, which exits 1, not 2).
	if out, code := runCLI(t, "measure", "http://127.0.0.1:1", "--rate", "1", "--duration", "1ms", "--bucket", "1ms", "--allow-failures"); code == 2 || strings.Contains(out, "bucket") {
		t.Errorf("measure --bucket 1ms: exit %d, want the load to run\n%s", code, out)
	}
}

// A load that sent nothing (interrupted before its first request) measured nothing: it exits 1
// saying so, not 0 as though no request had failed.
func TestMeasureThatSentNothingExits1(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the first request
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"measure", "http://127.0.0.1:1", "--rate", "1", "--duration", "10s"})
	err := root.ExecuteContext(ctx)
	if code := exitStatus(err); code != 1 || err == nil || !strings.Contains(err.Error(), "no request was sent") {
		t.Fatalf("exit %d, error %v, output:\n%s\nwant exit 1 saying no request was sent", code, err, out.String())
	}
}
