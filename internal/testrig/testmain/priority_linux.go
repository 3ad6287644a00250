package testmain

import (
	"os"
	"strconv"
	"syscall"
)

// underLoadNice is the nice value a package under load runs at while it holds its turn (as root,
// as .ci/run runs): above the other packages go test runs beside it and the builds and links of
// the test binaries still to come, which on 2 cores otherwise starve its services' health checks
// for seconds (a third-party server's, python's http.server, most of all).
const underLoadNice = -10

// favour gives every thread of this process, and so every process it starts from now on, the
// nice value underLoadNice; as a user who may not raise a priority it changes nothing.
func favour() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, underLoadNice)
		}
	}
}
