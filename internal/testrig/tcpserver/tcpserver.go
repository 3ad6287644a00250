// Package tcpserver is the tests' one TCP server rig: a listener on 127.0.0.1:0 that hands every
// connection to a handler of the test's own, each in its own goroutine, closes the connection
// when the handler returns and the listener when the test ends. A scripted backend, a sink, a
// resetting peer or a slow path is then its handler alone.
package tcpserver

import (
	"net"
	"testing"
)

// Listen returns a TCP listener on 127.0.0.1:0, closed when the test ends: for a test that wraps
// it (an OriginListener, a TLS listener) before serving it with ServeOn.
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
