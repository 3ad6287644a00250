// Package tcpserver is the tests' one TCP server rig: a listener on 127.0.0.1:0 that hands every
// connection to a handler of the test's own, each in its own goroutine, closes the connection
// when the handler returns and the listener when the test ends. A scripted backend, a sink, a
// resetting peer or a slow path is then its handler alone.
//
// It is also the tests' one source of a loopback address for a server that is not up yet (a
// child process, a backend that is down): FreeAddr, FreePort and FreePorts hand out ports from
// infra/ports, free now and below the ephemeral range.
package tcpserver

import (
	"net"
	"strconv"
	"testing"

	"github.com/zero502/zero502/infra/ports"
)

// Listen returns a TCP listener on 127.0.0.1:0, closed when the test ends: for a test that wraps
// it (an origin.Listener, a TLS listener) before serving it with ServeOn.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("tcpserver: listen on 127.0.0.1:0: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Serve listens on 127.0.0.1:0, serves every connection with handle and returns the address
// (host:port).
func Serve(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln := Listen(t)
	ServeOn(t, ln, handle)
	return ln.Addr().String()
}

// ServeOn accepts on ln until it is closed (at the latest when the test ends) and runs handle on
// every connection in its own goroutine, closing the connection when handle returns.
func ServeOn(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}

// FreePorts is n loopback ports free now and below the ephemeral range (infra/ports), so no
// outgoing connection of this or another test can take one before whatever it is for binds it.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ps, err := ports.Free(n)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// FreePort is one port of FreePorts.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)[0]
}

// FreeAddr is "127.0.0.1:PORT" for a FreePort: an address nothing listens on yet.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}
