package lb

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// forwardedForSent sends GET /headers with the X-Forwarded-For lines given from the loopback
// address local, and returns the X-Forwarded-For the backend saw.
func forwardedForSent(t *testing.T, local, addr string, sent ...string) string {
	t.Helper()
	c := dialFrom(t, local, addr)
	head := "GET /headers HTTP/1.1\r\nHost: x\r\n"
	for _, v := range sent {
		head += "X-Forwarded-For: " + v + "\r\n"
	}
	_, _ = io.WriteString(c, head+"\r\n")
	got := readResponses(t, bufio.NewReader(c), 1, "GET")[0]
	var xff []string
	for _, line := range strings.Split(got, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "X-Forwarded-For: "); ok {
			xff = append(xff, v)
		}
	}
	return strings.Join(xff, " | ")
}

// A client's X-Forwarded-For is replaced by its address unless the client is one of
// balancer.trusted_proxies, whose list is kept and appended to (several lines joined in order).
func TestForwardedForIsKeptOnlyFromTrustedProxies(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.TrustedProxies = []string{"127.0.0.3/32"}
	l := startLB(t, set)
	if got := forwardedForSent(t, "127.0.0.2", l.Addr(), "6.6.6.6", "7.7.7.7"); got != "127.0.0.2" {
		t.Errorf("X-Forwarded-For from an untrusted client: %q, want only its address 127.0.0.2", got)
	}
	if got := forwardedForSent(t, "127.0.0.2", l.Addr()); got != "127.0.0.2" {
		t.Errorf("no X-Forwarded-For from an untrusted client: %q, want 127.0.0.2", got)
	}
	if got := forwardedForSent(t, "127.0.0.3", l.Addr(), "10.0.0.1", "10.0.0.2"); got != "10.0.0.1, 10.0.0.2, 127.0.0.3" {
		t.Errorf("X-Forwarded-For from a trusted proxy: %q, want 10.0.0.1, 10.0.0.2, 127.0.0.3", got)
	}
}

// The slow-body cap counts an IPv6 client per /64: every address of a /64 shares its slots.
func TestSlowBodyCapCountsIPv6PerSlash64(t *testing.T) {
	sb := newSlowBodies(2)
	for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"} {
		if !sb.acquire([]byte(ip)) {
			t.Fatalf("%s refused under the cap", ip)
		}
	}
	if sb.acquire([]byte("2001:db8:1:2::77")) {
		t.Errorf("a third slow body from the same /64 was let in")
	}
	if !sb.acquire([]byte("2001:db8:1:3::1")) {
		t.Errorf("another /64 was refused")
	}
	if !sb.acquire([]byte("127.0.0.2")) || !sb.acquire([]byte("127.0.0.3")) {
		t.Errorf("IPv4 clients are still counted per address")
	}
	sb.release([]byte("2001:db8:1:2::1"))
	if !sb.acquire([]byte("2001:db8:1:2::abcd")) {
		t.Errorf("a slot given back by the /64 was not reusable")
	}
}
