package agent

import "sync"

// DefaultDedup is how many message ids a DedupStore remembers when its limit is 0.
const DefaultDedup = 1 << 16

// DedupStore remembers the ids of applied messages, so a replayed message is acknowledged
// without being applied again. It forgets the oldest ids beyond its limit: a replay older than
// that many messages would be applied twice, so the limit must exceed any agent's outbox.
// Safe for concurrent use.
type DedupStore struct {
	limit int

	mu    sync.Mutex
	seen  map[string]struct{}
	order []string
}

// NewDedupStore returns a store of limit ids (DefaultDedup when 0 or less).
func NewDedupStore(limit int) *DedupStore {
	if limit <= 0 {
		limit = DefaultDedup
	}
	return &DedupStore{limit: limit, seen: map[string]struct{}{}}
}

// First records id and reports whether it is new (apply it) or a duplicate (do not).
func (s *DedupStore) First(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.seen[id]; dup {
		return false
	}
	s.seen[id] = struct{}{}
	s.order = append(s.order, id)
	if len(s.order) > s.limit {
		delete(s.seen, s.order[0])
		s.order = s.order[1:]
	}
	return true
}
