package agent

import (
	"sync"
	"time"
)

// Bounds of a DedupStore.
const (
	// DefaultDedup is how many message ids a DedupStore remembers when its limit is 0.
	DefaultDedup = 1 << 16
	// MaxIDLen is the longest message id accepted: an agent's ids are short (a counter, a
	// UUID); a longer one is refused, not stored.
	MaxIDLen = 256
	// DefaultDedupBytes bounds the bytes of the ids a store holds (with DefaultDedup ids of
	// MaxIDLen it is the product).
	DefaultDedupBytes = DefaultDedup * MaxIDLen
	// DefaultReplayWindow is how long a store remembers an id: a replay from an agent's outbox
	// comes within it. An id older than that may be forgotten to make room.
	DefaultReplayWindow = time.Hour
)

// Verdict is what a DedupStore says of a message id.
type Verdict int

// Verdicts of DedupStore.First.
const (
	// New: the id is recorded; apply the message.
	New Verdict = iota
	// Duplicate: the id was seen; acknowledge without applying.
	Duplicate
	// Refused: the id is longer than MaxIDLen, or the store is full of ids still inside the
	// replay window; neither apply nor acknowledge (the agent replays it later).
	Refused
)

// DedupStore remembers the ids of applied messages, so a replayed message is acknowledged
// without being applied again. An id is kept for the replay window; once the store holds its
// limit of ids or bytes, only ids older than the window make room, and a new id is refused
// while none is: a flood of new ids never makes the store forget one a genuine replay may still
// carry. Safe for concurrent use.
type DedupStore struct {
	limit    int
	maxBytes int
	window   time.Duration
	now      func() time.Time

	mu    sync.Mutex
	seen  map[string]struct{}
	order []seenID // oldest first
	bytes int
}

type seenID struct {
	id string
	at time.Time
}

// NewDedupStore returns a store of limit ids (DefaultDedup when 0 or less), at most
// DefaultDedupBytes of ids, each kept for DefaultReplayWindow.
func NewDedupStore(limit int) *DedupStore {
	if limit <= 0 {
		limit = DefaultDedup
	}
	return &DedupStore{limit: limit, maxBytes: DefaultDedupBytes, window: DefaultReplayWindow, now: time.Now,
		seen: map[string]struct{}{}}
}

// First records id and says whether it is new (apply it), a duplicate (do not) or refused.
func (s *DedupStore) First(id string) Verdict {
	if len(id) > MaxIDLen {
		return Refused
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.seen[id]; dup {
		return Duplicate
	}
	now := s.now()
	for len(s.order) > 0 && (len(s.order) >= s.limit || s.bytes+len(id) > s.maxBytes) && now.Sub(s.order[0].at) > s.window {
		old := s.order[0]
		delete(s.seen, old.id)
		s.bytes -= len(old.id)
		s.order = s.order[1:]
	}
	if len(s.order) >= s.limit || s.bytes+len(id) > s.maxBytes {
		return Refused
	}
	s.seen[id] = struct{}{}
	s.order = append(s.order, seenID{id, now})
	s.bytes += len(id)
	return New
}
