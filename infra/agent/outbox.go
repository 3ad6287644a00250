package agent

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// DefaultOutbox is how many unacknowledged messages an Outbox holds when its limit is 0.
const DefaultOutbox = 1024

// errOutboxFull is Send's error when the outbox holds its limit of unacknowledged messages.
var errOutboxFull = errors.New("outbox full")

// errTooLarge is Send's error when a body's frame would be over MaxFrame.
var errTooLarge = errors.New("message too large")

// Outbox holds every message sent and not yet acknowledged, in send order: while disconnected
// they wait; after a reconnect they are replayed. It is bounded: Send fails with errOutboxFull
// rather than growing without limit while the agent is cut off. Safe for concurrent use.
type Outbox struct {
	limit int

	mu      sync.Mutex
	entries []entry
	seq     uint64
	changed chan struct{}
}

type entry struct {
	seq uint64
	msg Frame
}

// NewOutbox returns an outbox of limit messages (DefaultOutbox when 0 or less).
func NewOutbox(limit int) *Outbox {
	if limit <= 0 {
		limit = DefaultOutbox
	}
	return &Outbox{limit: limit, changed: make(chan struct{}, 1)}
}

// Send queues body as a new message with a fresh id and returns the id. A body whose frame
// would be over MaxFrame is refused (errTooLarge), not queued: no session could write it, so
// it would fail every session, be replayed first after every reconnect and hold back every
// message behind it.
func (o *Outbox) Send(body string) (string, error) {
	msg := Frame{Kind: kindMsg, ID: rand.Text(), Body: body}
	// The frame is measured as it goes on the wire: JSON escaping can make a body under the
	// limit a frame over it (a control character takes 6 bytes).
	data, err := json.Marshal(msg)
	if err != nil {
		return "", fmt.Errorf("message not queued: encode its body of %d bytes: %w", len(body), err)
	}
	if len(data) > MaxFrame {
		return "", fmt.Errorf("message not queued: %w: its body of %d bytes is a frame of %d bytes (JSON-escaped), "+
			"more than the %d-byte frame limit; split it into smaller messages", errTooLarge, len(body), len(data), MaxFrame)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.entries) >= o.limit {
		return "", fmt.Errorf("message not queued: %w: %d messages wait for an acknowledgement (limit %d); "+
			"the agent is disconnected or the server does not acknowledge: retry later or raise the outbox limit",
			errOutboxFull, len(o.entries), o.limit)
	}
	o.seq++
	o.entries = append(o.entries, entry{seq: o.seq, msg: msg})
	o.notify()
	return msg.ID, nil
}

// Ack removes the message id (an acknowledged message is delivered); false when it was not
// waiting (a second ack of a replay).
func (o *Outbox) Ack(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, e := range o.entries {
		if e.msg.ID == id {
			o.entries = append(o.entries[:i], o.entries[i+1:]...)
			o.notify()
			return true
		}
	}
	return false
}

// Len is how many messages wait for an acknowledgement.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.entries)
}

// after returns the waiting messages queued after seq (0: all of them, a replay), and the
// highest seq returned.
func (o *Outbox) after(seq uint64) ([]Frame, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Frame
	for _, e := range o.entries {
		if e.seq > seq {
			out = append(out, e.msg)
			seq = e.seq
		}
	}
	return out, seq
}

// notify wakes a session's writer (never blocks).
func (o *Outbox) notify() {
	select {
	case o.changed <- struct{}{}:
	default:
	}
}
