package lb

import (
	"context"
	"time"
)

// trimStacks keeps idle client connections small, through the trim the process gave
// (WithMemoryTrim: the library itself never forces a collection). Go shrinks a goroutine's
// stack only during a garbage collection, by half at most per collection, and frees the old
// stacks only in a later one; a forwarding path that allocates nothing never triggers a
// collection. Without help every idle connection would keep the stack it grew while proxying
// (8 KiB instead of 2 KiB), and read buffers released to their pool would stay resident. So
// when many client connections appeared since the last trim, trim, and once more when their
// number settles (at most once per interval).
func (s *Server) trimStacks(ctx context.Context, every time.Duration, growth int) {
	t := time.NewTicker(every)
	defer t.Stop()
	last, prev := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		grew := n >= last+growth                    // many new connections, still coming
		settled := n >= last+growth/10 && n == prev // the newest ones have gone idle
		if grew || settled {
			s.trim()
			last = n
		}
		if n < last {
			last = n
		}
		prev = n
	}
}
