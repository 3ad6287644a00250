package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// procStat is what zero502 reads of /proc/<pid>/stat: the state letter (field 3) and the start
// time in clock ticks since boot (field 22), which together with the pid names one process for
// good: a recycled pid has a different start time.
type procStat struct {
	State byte
	Start uint64
}

// errNoProcess: no process with that pid exists.
var errNoProcess = errors.New("no such process")

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return procStat{}, errNoProcess
	}
	if err != nil {
		return procStat{}, err
	}
	return parseStat(data)
}

// parseStat parses a /proc/<pid>/stat line. The command name (field 2) is in parentheses and may
// itself contain spaces and parentheses, so fields are counted from the last ')'.
func parseStat(data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed /proc stat line %q", data)
	}
	f := bytes.Fields(data[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed /proc stat line %q", data)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed start time in /proc stat line %q: %w", data, err)
	}
	return procStat{State: f[0][0], Start: start}, nil
}

// liveness says whether the process pid that started at start (ticks) is still running: it
// exists, has that start time (not a recycled pid), and is not a zombie ('Z') or dead ('X'). A
// zombie still answers kill(pid, 0), which is why this reads /proc instead.
func liveness(pid int, start uint64) bool {
	st, err := readStat(pid)
	if err != nil {
		return false
	}
	if st.Start != start {
		return false
	}
	return st.State != 'Z' && st.State != 'X'
}

// groupLives says whether a live process (not a zombie, which PID 1 may take its time to reap)
// is left in process group pgid: one the service's leader left behind when it exited (a wrapper
// script's server that it did not exec). The group is judged by its members, whatever their
// pids: processes with a higher pid than the leader's are read first (what it forked came after
// it, and reading every /proc/N/stat of a busy host costs tens of milliseconds), and only when
// none of them is in the group but the group still exists are the lower pids read too: after a
// pid wrap-around (pid_max reached), what the leader forked has a lower pid than its own.
func groupLives(pgid int) bool {
	// The usual group is the leader alone, a zombie until its parent (PID 1) reaps it: give that
	// a moment before reading /proc.
	for i := 0; i < 5 && groupExists(pgid); i++ {
		time.Sleep(2 * time.Millisecond)
	}
	if !groupExists(pgid) {
		return false
	}
	entries, _ := os.ReadDir("/proc")
	var lower []string // the pids below pgid, read only if no higher one is a live member
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		switch {
		case err != nil:
		case pid < pgid:
			lower = append(lower, e.Name())
		case liveMember(e.Name(), pgid):
			return true
		}
	}
	if !groupExists(pgid) {
		return false
	}
	for _, pid := range lower {
		if liveMember(pid, pgid) {
			return true
		}
	}
	return false
}

// liveMember says whether the process pid (a /proc entry's name) is in process group pgid and
// is neither a zombie nor dead.
func liveMember(pid string, pgid int) bool {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(data[i+1:])
	return len(f) > 2 && string(f[2]) == strconv.Itoa(pgid) && len(f[0]) == 1 && f[0][0] != 'Z' && f[0][0] != 'X'
}

// leftBehind says whether r's leader has exited but something it started is still alive in its
// process group (a wrapper script's server it did not exec, a sidecar started with &). While a
// group has a member the kernel gives its id to no new process, so a live process with r's pid
// and another start time means r's group is gone (and the group with that id is not r's).
func leftBehind(r record) bool {
	if st, err := readStat(r.PID); err == nil && st.Start != r.ProcStart {
		return false
	}
	return groupLives(r.PID)
}
