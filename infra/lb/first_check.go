package lb

import (
	"context"
	"sync"
)

// The initial state of a configured backend. A backend in the configuration is not in rotation
// until a health check answers 200, as with HAProxy's `init-state down`
// (standing.StartAwaitingFirstCheck): with start-first deploys the configuration names both
// ports of a service and only one runs, so an LB that began with every backend healthy sent
// requests to the idle port until its checks failed (a POST there got 502: it is never
// replayed). When the LB starts (Run), it checks every configured backend once, all at the same
// time, before it accepts a connection, so the first round costs at most one health timeout;
// connections that arrive meanwhile wait in the listener's backlog. The first verdict places
// each one: a 200 puts it in rotation at once (one good check, not healthy_threshold: a
// configured backend is expected to be there, unlike one the admin API adds), a 503 makes it
// draining, anything else unhealthy. Until it has been in rotation once, its first good check
// puts it in; from then on the thresholds apply.

// firstChecks runs the first health check of every backend, in parallel, each within the
// health timeout, and places each by its verdict.
func (s *Server) firstChecks(ctx context.Context) {
	var wg sync.WaitGroup
	for _, b := range s.members.all() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if t, ok := b.Record(s.check.probe(ctx, b), s.clock.Now(), s.check.th); ok {
				s.changed(b, t)
			}
		}()
	}
	wg.Wait()
}
