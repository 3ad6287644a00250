package main

import (
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
	if out, code := runCLI(t, "measure", "http://127.0.0.1:1", "--rate", "1", "--duration", "1ms", "--bucket", "1ms", "--allow-failures"); code != 0 {
		t.Errorf("measure --bucket 1ms: exit %d, want 0\n%s", code, out)
	}
}
