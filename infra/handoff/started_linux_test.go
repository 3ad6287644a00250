package handoff

import (
	"testing"
	"time"
)

// A process started years after the boot (an LB box up for three years) has a start time in
// ticks that, in nanoseconds, is past what a time.Duration holds: it must still be read as
// when it started, or the reused-pid check compares against a time that wrapped around.
func TestStartTimeOfAProcessStartedYearsAfterTheBoot(t *testing.T) {
	boot := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, after := range []time.Duration{time.Second + 10*time.Millisecond, 3 * 365 * 24 * time.Hour, 10 * 365 * 24 * time.Hour} {
		ticks := uint64(after / (time.Second / userHZ))
		if got, want := sinceBoot(boot.Unix(), ticks), boot.Add(after); !got.Equal(want) {
			t.Errorf("%d ticks after a boot at %s: %s, want %s", ticks, boot, got.UTC(), want)
		}
	}
}
