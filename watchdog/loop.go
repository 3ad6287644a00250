package watchdog

import (
	"context"
	"fmt"
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

// TickEach runs one tick of every watchdog in ws, in order (zero502 watchdog without --loop),
// handing each report, or error, to each. It returns an error when a host could not be checked
// or, failing that, when a heal failed, each counted over the hosts; the other hosts were still
// ticked. Nil means every host was checked and every heal it needed succeeded.
func TickEach(ctx context.Context, ws []*Watchdog, each func(Report, error)) error {
	failed, healsFailed := 0, 0
	for _, w := range ws {
		rep, err := w.Tick(ctx)
		if err != nil {
			failed++
		} else if rep.Err() != nil {
			healsFailed++
		}
		each(rep, err)
	}
	if failed > 0 {
		return fmt.Errorf("watchdog: %d of %d hosts could not be checked (see the log above)", failed, len(ws))
	}
	if healsFailed > 0 {
		return fmt.Errorf("watchdog: a heal failed on %d of %d hosts (see the log above)", healsFailed, len(ws))
	}
	return nil
}
