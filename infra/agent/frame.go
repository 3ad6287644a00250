package agent

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// MaxFrame bounds one frame's JSON document; a larger frame is a protocol error that ends the
// session. It bounds a message's body too: Outbox.Send refuses a body whose frame would be
// larger, JSON escaping included, rather than queue a message no session can carry.
const MaxFrame = 1 << 20

// Frame is what travels on the session, either way: a Message from the agent (Kind "msg") or
// the server's acknowledgement of one (Kind "ack").
type Frame struct {
	Kind string `json:"kind"`
	// ID is the message's id: unique per message, the same on every replay.
	ID string `json:"id"`
	// Body is the message's payload (empty on an ack).
	Body string `json:"body,omitempty"`
	// Dup is set on an ack when the server had already applied this id: the replay was harmless.
	Dup bool `json:"dup,omitempty"`
}

// Frame kinds.
const (
	kindMsg = "msg"
	kindAck = "ack"
)

// writeFrame writes f as one length-prefixed JSON frame.
func writeFrame(w io.Writer, f Frame) error {
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode %s frame %s: %w", f.Kind, f.ID, err)
	}
	if len(data) > MaxFrame {
		return fmt.Errorf("%s frame %s is %d bytes, more than the %d-byte limit; send a smaller body", f.Kind, f.ID, len(data), MaxFrame)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	_, err = w.Write(buf)
	return err
}

// readFrame reads one frame.
func readFrame(r io.Reader) (Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return Frame{}, fmt.Errorf("frame of %d bytes announced, more than the %d-byte limit: not a zero502 agent peer?", n, MaxFrame)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return Frame{}, fmt.Errorf("frame cut short after its length: %w", err)
	}
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return Frame{}, fmt.Errorf("frame is not JSON: %w", err)
	}
	if f.ID == "" || (f.Kind != kindMsg && f.Kind != kindAck) {
		return Frame{}, fmt.Errorf("frame kind %q id %q: want kind %q or %q and an id", f.Kind, f.ID, kindMsg, kindAck)
	}
	return f, nil
}
