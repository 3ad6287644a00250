package mesh

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Metrics are the basic numbers a self-report carries (the write-up's panel shows them with a
// "stale" badge when they are old).
type Metrics struct {
	// Load1 is the one-minute load average (/proc/loadavg).
	Load1 float64 `json:"load1"`
	// Connections is how many established TCP connections the service's port holds.
	Connections int `json:"connections"`
	// ServiceLatency is how long the self-check of the service took, in seconds.
	ServiceLatency float64 `json:"service_latency_seconds"`
}

// collectMetrics reads the load and the connections to port from /proc; what cannot be read
// stays 0 (metrics inform, they never fail a report).
func collectMetrics(port int, latency time.Duration) *Metrics {
	m := &Metrics{ServiceLatency: latency.Seconds()}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 0 {
			m.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if port > 0 {
		for _, p := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			m.Connections += established(p, port)
		}
	}
	return m
}

// established counts the ESTABLISHED (state 01) sockets of a /proc/net/tcp file whose local
// port is port.
func established(path string, port int) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "01" {
			n++
		}
	}
	return n
}
