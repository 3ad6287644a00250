package handoff

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's start time: clock ticks, 100 a second on Linux
// whatever the kernel's own HZ.
const userHZ = 100

// startedAt is when process pid started, from its start time in ticks since boot and the boot
// time (/proc/stat btime), to the second.
func startedAt(pid int) (time.Time, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	i := bytes.LastIndexByte(stat, ')')
	f := bytes.Fields(stat[i+1:])
	if i < 0 || len(f) < 20 {
		return time.Time{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ticks, err := strconv.ParseUint(string(f[19]), 10, 64) // field 22, starttime
	if err != nil {
		return time.Time{}, fmt.Errorf("malformed start time in /proc/%d/stat: %w", pid, err)
	}
	sys, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range bytes.Split(sys, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			boot, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("malformed btime in /proc/stat: %w", err)
			}
			return sinceBoot(boot, ticks), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in /proc/stat")
}

// sinceBoot is the time ticks (of userHZ) after the boot time boot (Unix seconds). Whole
// seconds first: ticks in nanoseconds overflow a time.Duration 2.9 years after the boot.
func sinceBoot(boot int64, ticks uint64) time.Time {
	return time.Unix(boot+int64(ticks/userHZ), int64(ticks%userHZ)*int64(time.Second/userHZ))
}
