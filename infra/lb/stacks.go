package lb

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"
)

// trimStacks keeps idle client connections small. Go shrinks a goroutine's stack only during a
// garbage collection, and a forwarding path that allocates nothing never triggers one: every
// connection would keep, while idle, the stack it grew while proxying (8 KiB and more instead
// of 2 KiB), and each collection halves a stack at most once. So when many client connections
// appeared since the last trim, collect three times and return the freed memory to the OS (at
// most once per interval; a few milliseconds of work against megabytes of stacks).
func (s *Server) trimStacks(ctx context.Context, every time.Duration, growth int) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n >= last+growth {
			runtime.GC()
			runtime.GC()
			debug.FreeOSMemory()
		}
		if n >= last+growth || n < last {
			last = n
		}
	}
}
