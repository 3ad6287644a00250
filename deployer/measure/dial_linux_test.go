package measure

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// TestAConnectWithinTheRequestTimeoutIsNotATimeout: Options.Timeout bounds one request from
// dial to the end of its body, and nothing shorter does. A connect whose first SYNs the server
// drops (its accept queue full, as a balancer's under a burst) completes on the kernel's
// retransmit at 3 s; with a 10 s timeout the request is answered, slowly, and is ok.
func TestAConnectWithinTheRequestTimeoutIsNotATimeout(t *testing.T) {
	ln := tcpserver.Listen(t)
	tl := ln.(*net.TCPListener)
	raw, err := tl.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var lerr error
	if err := raw.Control(func(fd uintptr) { lerr = unix.Listen(int(fd), 0) }); err != nil || lerr != nil {
		t.Fatalf("listen backlog 0: %v %v", err, lerr)
	}
	addr := ln.Addr().String()
	// Fill the accept queue (one connection with a backlog of 0): from then on every SYN is dropped.
	poll.Until(t, 5*time.Second, "the accept queue of "+addr+" to be full", func() bool {
		if acceptQueue(t, raw) >= 1 {
			return true
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return acceptQueue(t, raw) >= 1
	})

	l, err := New(Options{Target: "http://" + addr, Rate: 1, Duration: time.Second, NewConnShare: 1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *Result, 1)
	go func() { done <- l.Run(context.Background()) }()
	// Once the kernel has retransmitted the load's SYN (at 1 s), the queue is emptied: the next
	// retransmit, 2 s later, connects.
	port := ln.Addr().(*net.TCPAddr).Port
	poll.Until(t, 10*time.Second, "the load's connect to "+addr+" retransmitting its SYN", func() bool {
		return synRetransmits(t, port) >= 1
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	res := <-done
	if res.Sent != 1 || res.Counts[OK] != 1 {
		t.Fatalf("a request connected after 3 s of a 10 s timeout: counts %v, errors %v; want it ok", nonZero(res.Counts), res.Errors)
	}
}

// acceptQueue is the number of connections waiting in the accept queue of the listener raw.
func acceptQueue(t *testing.T, raw interface {
	Control(func(uintptr)) error
}) int {
	t.Helper()
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		t.Fatalf("TCP_INFO of a listener: %v %v", err, ierr)
	}
	return int(info.Unacked)
}

// synRetransmits is how many times the kernel retransmitted the SYN of a connect in progress to
// 127.0.0.1:port (the retrnsmt column of /proc/net/tcp of a socket in SYN_SENT), 0 when none is.
func synRetransmits(t *testing.T, port int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	most := 0
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 7 || f[2] != want || f[3] != "02" { // 02: SYN_SENT
			continue
		}
		if n, err := strconv.ParseInt(f[6], 16, 0); err == nil && int(n) > most {
			most = int(n)
		}
	}
	return most
}
