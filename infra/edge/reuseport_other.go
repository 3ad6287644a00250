//go:build !unix

package edge

import "net"

// listenReusePort listens on addr (no SO_REUSEPORT here: no binary upgrade either).
func listenReusePort(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
