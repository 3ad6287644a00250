package edgepick

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// DefaultMaxAge is how old a measurement may get before it is stale and everything is measured
// again (by Choose on a restart, by the Watcher beside a session). The write-up gives no number;
// an hour keeps restarts cheap and re-measurement far rarer than the failback rounds.
const DefaultMaxAge = time.Hour

// Picker chooses the edge an agent connects to. The zero value is not usable: set Name (or Addrs)
// and Probe. No field is global: two Pickers with different state files are independent.
type Picker struct {
	// Name is the edge name, host:port, resolved through Resolver; its A set is the candidate list.
	Name string
	// Addrs, when set, is the candidate list and Name is not resolved (labs, tests).
	Addrs []netip.AddrPort
	// Resolver resolves Name; nil is net.DefaultResolver, the system resolver.
	Resolver Resolver
	// Probe measures one edge: TLSProbe(conf, budget) in production.
	Probe probeFunc
	// StatePath is the agent's state file; "" keeps nothing across restarts.
	StatePath string
	// MaxAge is how old a measurement may be before it is stale; 0 is DefaultMaxAge.
	MaxAge time.Duration
	// Clock tells the time of measurements and their age; nil is the wall clock.
	Clock clock.Clock
	// Logger gets one line per choice and one per "no choice", saying why; nil is slog.Default().
	Logger *slog.Logger
}

// Choice is the outcome of Choose.
type Choice struct {
	// Addr is the edge to connect to (valid only when Choose returned true).
	Addr netip.AddrPort
	// Set is the candidate set (also when there is no choice, if it was resolved).
	Set Set
	// Ranking is the measurement the choice comes from, best first.
	Ranking Ranking
	// MeasuredAt is when Ranking was measured.
	MeasuredAt time.Time
	// FromState is true when the choice was read from the state file without probing.
	FromState bool
	// Skipped is true when there were fewer than two candidates: nothing to choose, by design.
	Skipped bool
	// NoChoice says why there is no choice when Choose returned false (it is also logged).
	NoChoice string
}

// Choose applies the rules: resolve the set; with fewer than two candidates do nothing; use the
// state file when it was measured from the same set and is not older than MaxAge; otherwise
// measure every candidate in parallel, choose the best and save the ranking. It never fails: DNS
// refusing, no edge answering, an unreadable or unwritable state file all end in false ("no
// choice": connect as before) or in a choice kept for this process only, with a log line saying
// why.
func (p *Picker) Choose(ctx context.Context) (Choice, bool) {
	log := p.logger()
	set, err := p.candidates(ctx)
	if err != nil {
		return p.none(Choice{}, fmt.Sprintf("the candidate list is unknown: %v", err))
	}
	c := Choice{Set: set}
	if len(set) < 2 {
		c.Skipped = true
		return p.none(c, fmt.Sprintf("%d candidate(s) %v: nothing to choose, the mechanism is skipped", len(set), set))
	}
	now := p.clock().Now()

	if p.StatePath != "" {
		st, err := LoadState(p.StatePath)
		switch {
		case errors.Is(err, errNoState):
		case err != nil:
			log.Warn("edgepick: state file unusable; measuring again", "state", p.StatePath, "err", err)
		default:
			if why := st.Stale(set, now, p.maxAge()); why != "" {
				log.Info("edgepick: state is stale; measuring again", "state", p.StatePath, "why", why)
			} else {
				c.Addr, c.Ranking, c.MeasuredAt, c.FromState = st.Chosen, st.Ranking, st.MeasuredAt, true
				log.Info("edgepick: choice read from state", "edge", c.Addr, "state", p.StatePath,
					"measured_at", c.MeasuredAt, "candidates", len(set))
				return c, true
			}
		}
	}

	if p.Probe == nil {
		return p.none(c, "no probe configured (Picker.Probe is nil)")
	}
	c.Ranking = Measure(ctx, set, p.Probe)
	c.MeasuredAt = now
	best, ok := c.Ranking.Best()
	if !ok {
		return p.none(c, fmt.Sprintf("no edge of %v finished a full TLS handshake (first: %v)", set, c.Ranking[0].Err))
	}
	c.Addr = best.Addr
	log.Info("edgepick: choice measured", "edge", c.Addr, "handshake", best.Handshake, "connect", best.Connect,
		"candidates", len(set), "healthy", healthyCount(c.Ranking))
	p.save(c)
	return c, true
}

// Failover records that the session on failed ended in a failure and moves the choice to the
// next healthy edge of c's ranking after failed (wrapping around), without probing: the client's
// own failover already found out failed is gone, and recording it means a restart does not go
// back to the address that just failed. The Watcher brings the agent back once failed answers
// again. False when no other edge was healthy in the ranking.
func (p *Picker) Failover(c Choice, failed netip.AddrPort) (Choice, bool) {
	n := len(c.Ranking)
	start := c.Ranking.Index(failed)
	for k := 1; k <= n; k++ {
		m := c.Ranking[(start+k+n)%n]
		if m.Addr != failed && m.Healthy() {
			c.Addr, c.FromState = m.Addr, false
			p.logger().Info("edgepick: failover recorded", "from", failed, "to", c.Addr)
			p.save(c)
			return c, true
		}
	}
	return p.none(c, fmt.Sprintf("failover from %s: no other edge of %v was healthy in the last measurement", failed, c.Set))
}

// candidates is the candidate set: Addrs, or Name resolved.
func (p *Picker) candidates(ctx context.Context) (Set, error) {
	if len(p.Addrs) > 0 {
		return setOf(p.Addrs), nil
	}
	if p.Name == "" {
		return nil, errors.New("no edge name and no address list (set Picker.Name or Picker.Addrs)")
	}
	return Resolve(ctx, p.Resolver, p.Name)
}

// save writes c to the state file; a failure is logged and the choice holds for this process.
func (p *Picker) save(c Choice) {
	if p.StatePath == "" {
		return
	}
	st := State{Name: p.Name, Set: c.Set, Ranking: c.Ranking, Chosen: c.Addr, MeasuredAt: c.MeasuredAt}
	if err := saveState(p.StatePath, st); err != nil {
		p.logger().Warn("edgepick: state not written; the choice holds for this process only "+
			"(a restart measures again)", "state", p.StatePath, "err", err)
	}
}

// none is "no choice", logged with why.
func (p *Picker) none(c Choice, why string) (Choice, bool) {
	c.Addr, c.NoChoice = netip.AddrPort{}, why
	level := slog.LevelWarn
	if c.Skipped {
		level = slog.LevelInfo // by design, not a problem
	}
	p.logger().Log(context.Background(), level, "edgepick: no choice; connecting as without edgepick", "why", why)
	return c, false
}

func (p *Picker) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}

func (p *Picker) clock() clock.Clock {
	if p.Clock == nil {
		return clock.Real{}
	}
	return p.Clock
}

func (p *Picker) maxAge() time.Duration {
	if p.MaxAge <= 0 {
		return DefaultMaxAge
	}
	return p.MaxAge
}

func healthyCount(r Ranking) int {
	n := 0
	for _, m := range r {
		if m.Healthy() {
			n++
		}
	}
	return n
}
