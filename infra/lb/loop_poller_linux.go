package lb

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// While the event loops accept, the listening socket is also registered in the Go runtime's
// network poller, once by the net.Listener and once more by any *os.File holding a duplicate
// of it in non-blocking mode (the upgrade's copy, kept to pass the socket to a new process:
// tableflip). Nobody waits there, but each registration is edge-triggered: every new
// connection is an edge, and when a runtime thread sleeps in the poller (the spare P's, most of
// the time) it wakes up, finds no goroutine to run and goes back to sleep. That is one futile
// thread wake-up per new connection, measured 13% of the LB's CPU per request with a new
// connection each (bench/lb.sh CLOSE=1 rows; HAProxy has no such cost).
//
// unpollListener therefore takes the listening socket out of every epoll set of the process
// except the loops' own (own). It is sound because the runtime never waits on the listener while
// the loops accept: the goroutine path's accept runs only without event loops or when it sniffs
// for PROXY headers, and the loops are not given the listener then (newLoops). Closing the
// listener later (the drain) has the runtime remove a registration that is gone already; it
// ignores that error. Where /proc is not mounted nothing changes.
func unpollListener(lfd int, own map[int]bool) (removed int) {
	var st unix.Stat_t
	if unix.Fstat(lfd, &st) != nil {
		return 0
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		epfd, err := strconv.Atoi(e.Name())
		if err != nil || own[epfd] {
			continue
		}
		if t, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || t != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for _, fd := range epollTargets(info, st.Ino) {
			if unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil) == nil {
				removed++
			}
		}
	}
	return removed
}

// epollTargets reads an epoll descriptor's /proc/self/fdinfo and returns the descriptors it
// watches that refer to inode ino. Each watched descriptor is a line such as
//
//	tfd:        5 events: 8000201d data: 3f9e3370af000003  pos:0 ino:13f03ef sdev:9
func epollTargets(fdinfo []byte, ino uint64) []int {
	var fds []int
	sc := bufio.NewScanner(bytes.NewReader(fdinfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "tfd:" {
			continue
		}
		fd, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		for _, kv := range f[2:] {
			if v, ok := strings.CutPrefix(kv, "ino:"); ok {
				if n, err := strconv.ParseUint(v, 16, 64); err == nil && n == ino {
					fds = append(fds, fd)
				}
			}
		}
	}
	return fds
}
