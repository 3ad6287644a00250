package edge

import "fmt"

// DefaultMaxConns is how many client connections a Forwarder or a Relay holds open at once
// when its MaxConns is 0: beyond it, a new connection is closed at once and counted as
// over_cap, so one client opening connections cannot exhaust the process's descriptors.
const DefaultMaxConns = 10000

// maxConns is n, or DefaultMaxConns when n is not set.
func maxConns(n int) int64 {
	if n <= 0 {
		return DefaultMaxConns
	}
	return int64(n)
}

// checkMaxConns checks --max-conns is 0 (the default) or more.
func checkMaxConns(n int) error {
	if n < 0 {
		return fmt.Errorf("--max-conns %d: must be 0 (the default, %d) or more", n, DefaultMaxConns)
	}
	return nil
}
