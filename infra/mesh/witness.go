package mesh

import (
	"fmt"
	"time"
)

// unreliable says why witness w's vote about target t must be ignored at now, or "" when it
// counts. The write-up: "if a server suddenly claims it cannot see half of its neighbours, the
// problem is most likely its own, and its vote is ignored". So w is unreliable when
//   - its own fresh report says it is unhealthy, or
//   - it consistently fails to reach at least UnreliableShare of its other neighbours (all but t,
//     whose reachability is the question), counting only neighbours with a fresh opinion from w
//     and a fresh healthy report of their own: failing to reach a server that is itself silent
//     or unavailable is no evidence against the witness.
func (e *Evaluator) unreliable(w, t string, now time.Time) string {
	if r, ok := e.freshReport(w, now); ok && !r.Healthy {
		return fmt.Sprintf("%s reports itself unhealthy", w)
	}
	others, failing := 0, 0
	for _, x := range e.servers {
		if x == w || x == t {
			continue
		}
		s, ok := e.freshStreak(w, x, now)
		if !ok {
			continue
		}
		if r, ok := e.freshReport(x, now); !ok || !r.Healthy {
			continue
		}
		others++
		if s.failing {
			failing++
		}
	}
	if others > 0 && float64(failing) >= e.th.UnreliableShare*float64(others) {
		return fmt.Sprintf("%s fails to reach %d of %d other neighbours that report healthy (unreliable at %g)",
			w, failing, others, e.th.UnreliableShare)
	}
	return ""
}
