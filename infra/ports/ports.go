// Package ports picks loopback ports for the services the demo and the tests start: free now,
// and outside the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768–60999 by
// default). A port taken from the ephemeral range (a listen on port 0) can be taken again, by
// any outgoing connection on the machine, between the moment it is freed and the moment the
// service binds it: a health check, a load generator's client, the balancer's own upstream
// connections. A stop-first deploy frees its port on purpose while it restarts, so on a busy
// host that bind then fails with "address already in use". A port below the range is never
// handed out that way; this is why a production service's port should sit below it too.
//
// Ports are chosen at random (two test processes rarely try the same ones) and checked by
// listening on them, all held until every one is found; a port handed out stays claimed while
// its process lives (claim.go), so neither this process nor another is handed it twice.
package ports

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// floor is the lowest port handed out: below it sit the well-known and common fixed ports.
const floor = 10000

// defaultEphemeralLow is Linux's default start of ip_local_port_range, for systems without it.
const defaultEphemeralLow = 32768

// tries bounds the random picks before giving up.
const tries = 500

// ephemeralLow is the first port of the kernel's ephemeral range, read from
// /proc/sys/net/ipv4/ip_local_port_range (the default where it cannot be read).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLow
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return defaultEphemeralLow
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= floor {
		return defaultEphemeralLow
	}
	return low
}

// Free returns n distinct loopback ports, free right now and below the ephemeral range, close
// together (a random start, then upward), so their offsets from the lowest stay small.
func Free(n int) ([]int, error) {
	top := ephemeralLow()
	if n <= 0 || n > top-floor {
		return nil, fmt.Errorf("ports: %d ports asked for, want 1 to %d", n, top-floor)
	}
	for range tries {
		start := floor + rand.IntN(top-floor-n+1)
		held, out := listenFrom(start, top, n)
		closeAll(held)
		if len(out) == n {
			return out, nil
		}
		releaseAll(out)
	}
	return nil, fmt.Errorf("ports: found no %d free ports on 127.0.0.1 between %d and %d", n, floor, top)
}

// FreeAtOffsets returns a base such that base+off is free right now for every off in offsets,
// below the ephemeral range and not among avoid: a start-first service's second port on every
// host of a fleet whose hosts differ by their offsets.
func FreeAtOffsets(offsets, avoid []int) (int, error) {
	top := ephemeralLow()
	span := 0
	for _, off := range offsets {
		if off < 0 {
			return 0, fmt.Errorf("ports: offset %d is negative, want ≥ 0", off)
		}
		span = max(span, off)
	}
	if span >= top-floor {
		return 0, fmt.Errorf("ports: offsets span %d ports, more than the %d below the ephemeral range", span, top-floor)
	}
	for range tries {
		base := floor + rand.IntN(top-floor-span)
		var held []net.Listener
		var taken []int
		ok := true
		for _, off := range offsets {
			p := base + off
			if slices.Contains(taken, p) {
				continue
			}
			if slices.Contains(avoid, p) || !claim(p) {
				ok = false
				break
			}
			ln, err := listen(p)
			if err != nil {
				release(p)
				ok = false
				break
			}
			held = append(held, ln)
			taken = append(taken, p)
		}
		closeAll(held)
		if ok {
			return base, nil
		}
		releaseAll(taken)
	}
	return 0, errors.New("ports: found no base with every offset free on 127.0.0.1 below the ephemeral range")
}

// listenFrom listens on free ports from start upward (below top) until it holds n. A port is
// claimed before it is bound, so a claimed one is never bound here, not even for the moment of
// the check: its service may be restarting on it (a stop-first deploy), and the listeners are
// held until all n are found.
func listenFrom(start, top, n int) ([]net.Listener, []int) {
	var held []net.Listener
	var out []int
	for p := start; p < top && len(out) < n; p++ {
		if !claim(p) {
			continue
		}
		ln, err := listen(p)
		if err != nil {
			release(p)
			continue
		}
		held = append(held, ln)
		out = append(out, p)
	}
	return held, out
}

func listen(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

func releaseAll(ps []int) {
	for _, p := range ps {
		release(p)
	}
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		_ = l.Close()
	}
}
