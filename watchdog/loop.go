package watchdog

import (
	"context"
	"time"
)

// Loop ticks every watchdog in ws now and then every interval until ctx ends (zero502 watchdog
// --loop, for development; on a server the systemd timer runs one tick per minute). Each
// report, or error, goes to each.
func Loop(ctx context.Context, ws []*Watchdog, interval time.Duration, each func(Report, error)) {
	if len(ws) == 0 {
		return
	}
	clk := ws[0].clock
	for {
		for _, w := range ws {
			rep, err := w.Tick(ctx)
			if ctx.Err() != nil {
				return
			}
			each(rep, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-clk.After(interval):
		}
	}
}
