package demo

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/measure"
)

// progress writes one line per step with the time since the demo started and, while the load
// runs, what it has seen so far.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (p *progress) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%5.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// event returns the deployer's Events callback: one line per step, with the load's counts.
func (p *progress) event(load *measure.Load) func(deployer.Event) {
	return func(e deployer.Event) {
		where := e.Host
		if e.Service != "" {
			where += "/" + e.Service
		}
		msg := fmt.Sprintf("%-10s %-13s %s", where, e.Step, e.Message)
		if load != nil {
			t := load.Totals()
			ok, failed := 0, 0
			for c, n := range t {
				if c.Failure() {
					failed += n
				} else {
					ok += n
				}
			}
			msg = fmt.Sprintf("load %5d ok %3d failed | %s", ok, failed, msg)
		}
		p.line("%s", msg)
	}
}
