package lb

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// A small RFC 6455 codec for the tests: a real WebSocket server (an echo behind testBackend's
// /ws) and client, framing and masking as the RFC says, no extensions.

const (
	wsText  = 0x1
	wsClose = 0x8
)

var errWSClosed = errors.New("websocket closed by the peer")

// wsAccept is the Sec-WebSocket-Accept for key (RFC 6455 §4.2.2).
func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// wsWrite writes one final frame; a client masks it (§5.3).
func wsWrite(w io.Writer, op byte, payload []byte, mask bool) error {
	hdr := []byte{0x80 | op, 0}
	n := len(payload)
	switch {
	case n < 126:
		hdr[1] = byte(n)
	case n < 1<<16:
		hdr[1] = 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	body := payload
	if mask {
		hdr[1] |= 0x80
		var key [4]byte
		_, _ = rand.Read(key[:])
		hdr = append(hdr, key[:]...)
		body = make([]byte, n)
		for i := range payload {
			body[i] = payload[i] ^ key[i%4]
		}
	}
	_, err := w.Write(append(hdr, body...))
	return err
}

// wsRead reads one frame (unmasking it) and returns its opcode and payload.
func wsRead(r *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if h[0]&0x80 == 0 {
		return 0, nil, errors.New("fragmented frames are not used in these tests")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	var key [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return 0, nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	if masked {
		for i := range p {
			p[i] ^= key[i%4]
		}
	}
	return h[0] & 0x0f, p, nil
}

// wsEcho is the WebSocket server of testBackend's /ws: after the handshake it says its name,
// then echoes every text frame until the client closes (or the connection ends).
func wsEcho(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Sec-WebSocket-Key")
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
			http.Error(w, "not a websocket handshake", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", wsAccept(key))
		if err := brw.Flush(); err != nil {
			return
		}
		if err := wsWrite(conn, wsText, []byte(name), false); err != nil {
			return
		}
		for {
			op, p, err := wsRead(brw.Reader)
			if err != nil {
				return
			}
			if op == wsClose {
				_ = wsWrite(conn, wsClose, p, false)
				return
			}
			if err := wsWrite(conn, op, p, false); err != nil {
				return
			}
		}
	}
}

// wsConn is a test WebSocket client connection.
type wsConn struct {
	c  net.Conn
	br *bufio.Reader
	// backend is the name the server said first.
	backend string
}

// wsDial opens a WebSocket to ws://addr/ws, checks the 101 answer and reads the server's name.
func wsDial(addr string) (*wsConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return wsHandshake(c)
}

// wsHandshake upgrades c, a new connection to the LB (TCP or TLS), to a WebSocket on /ws.
func wsHandshake(c net.Conn) (*wsConn, error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var k [16]byte
	_, _ = rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", key)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if resp.StatusCode != 101 || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") ||
		!strings.EqualFold(resp.Header.Get("Connection"), "upgrade") || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept(key) {
		c.Close()
		return nil, fmt.Errorf("handshake answer: %d %v", resp.StatusCode, resp.Header)
	}
	op, name, err := wsRead(br)
	if err != nil || op != wsText {
		c.Close()
		return nil, fmt.Errorf("server's name: op %d: %v", op, err)
	}
	return &wsConn{c: c, br: br, backend: string(name)}, nil
}

// echo sends msg and returns what came back.
func (w *wsConn) echo(msg []byte) ([]byte, error) {
	_ = w.c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := wsWrite(w.c, wsText, msg, true); err != nil {
		return nil, err
	}
	op, p, err := wsRead(w.br)
	if err != nil {
		return nil, err
	}
	if op == wsClose {
		return nil, errWSClosed
	}
	return p, nil
}

// close runs the closing handshake: a close frame, the server's close frame, then EOF.
func (w *wsConn) close() error {
	defer w.c.Close()
	_ = w.c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := wsWrite(w.c, wsClose, []byte{0x03, 0xe8}, true); err != nil {
		return err
	}
	op, _, err := wsRead(w.br)
	if err != nil || op != wsClose {
		return fmt.Errorf("close answer: op %d: %v", op, err)
	}
	if _, err := w.br.ReadByte(); err != io.EOF {
		return fmt.Errorf("after the close frames: %v, want EOF", err)
	}
	return nil
}
