package edge

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/pires/go-proxyproto"
)

// listenTCP listens on addr for connections to relay. TCP keep-alive probes are off on the
// accepted connections (Go turns them on by default, at four setsockopt calls per connection):
// the idle timeout already ends a connection whose peer went away without a word.
func listenTCP(addr string) (net.Listener, error) {
	return (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", addr)
}

// dialTCP dials the other side of a relayed connection within timeout, or until ctx ends,
// keep-alive probes off as on the accepted side.
func dialTCP(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	return (&net.Dialer{Timeout: timeout, KeepAlive: -1}).DialContext(ctx, "tcp", addr)
}

// sendHeader writes the PROXY header to server, within timeout, together with the bytes the
// client has already sent (a request has usually arrived by the time the dial completes): one
// write and one segment to the origin instead of two. When the client has sent nothing yet the
// header goes alone, so a protocol in which the server speaks first still works. It returns how
// many client bytes went with the header; a client that already failed is left for the splice to
// find.
func sendHeader(client, server net.Conn, hb []byte, timeout time.Duration) (int, error) {
	pb := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(pb)
	buf := *pb
	k := copy(buf, hb)
	n := readReady(client, buf[k:])
	_ = server.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := server.Write(buf[:k+n]); err != nil {
		return 0, fmt.Errorf("write the PROXY header to %s: %w", server.RemoteAddr(), err)
	}
	_ = server.SetWriteDeadline(time.Time{})
	return n, nil
}

// proxyHeader is the PROXY v2 header of a connection from src (the client as the edge measured
// it) to dst (the address the client dialled), encoded.
func proxyHeader(src, dst net.Addr) ([]byte, error) {
	hb, err := proxyproto.HeaderProxyFromAddrs(2, src, dst).Format()
	if err != nil {
		return nil, fmt.Errorf("format the PROXY header: %w", err)
	}
	return hb, nil
}
