package agent

import (
	"sync"
	"time"
)

// Bounds of a dedupStore.
const (
	// DefaultDedup is how many message ids a dedupStore remembers when its limit is 0.
	DefaultDedup = 1 << 16
	// maxIDLen is the longest message id accepted: an agent's ids are short (a counter, a
	// UUID); a longer one is refused, not stored.
	maxIDLen = 256
	// defaultDedupBytes bounds the bytes of the ids a store holds (with DefaultDedup ids of
	// maxIDLen it is the product).
	defaultDedupBytes = DefaultDedup * maxIDLen
	// defaultReplayWindow is how long a store remembers an id: a replay from an agent's outbox
	// comes within it. An id older than that may be forgotten to make room.
	defaultReplayWindow = time.Hour
)

// Verdict is what a dedupStore says of a message id.
type Verdict int

// Verdicts of dedupStore.First.
const (
	// New: the id is recorded; apply the message.
	New Verdict = iota
	// Duplicate: the id was seen; acknowledge without applying.
	Duplicate
	// Refused: the id is longer than maxIDLen, or the store is full of ids still inside the
	// replay window; neither apply nor acknowledge (the agent replays it later).
	Refused
)

// dedupStore remembers the ids of applied messages, so a replayed message is acknowledged
// without being applied again. An id is kept for the replay window; once the store holds its
// limit of ids or bytes, only ids older than the window make room, and a new id is refused
// while none is: a flood of new ids never makes the store forget one a genuine replay may still
// carry. Safe for concurrent use.
type dedupStore struct {
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
// defaultDedupBytes of ids, each kept for defaultReplayWindow.
func NewDedupStore(limit int) *dedupStore {
	if limit <= 0 {
		limit = DefaultDedup
	}
	return &dedupStore{limit: limit, maxBytes: defaultDedupBytes, window: defaultReplayWindow, now: time.Now,
		seen: map[string]struct{}{}}
}

// First records id and says whether it is new (apply it), a duplicate (do not) or refused.
func (s *dedupStore) First(id string) Verdict {
	if len(id) > maxIDLen {
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
