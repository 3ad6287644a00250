package edgepick

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/alert"
	"github.com/zero502/zero502/infra/clock"
)

// Edge states a Surveyor reports and alerts on.
const (
	EdgeHealthy     = "healthy"
	EdgeBackendDead = "backend-dead" // TCP connect succeeds, the full handshake fails
	edgeDown        = "down"         // TCP connect fails
)

// edgeState is m's state: health by the handshake, and the case the platform must hear about,
// an edge that accepts TCP while the handshake through it fails (a forwarder with a dead backend).
func edgeState(m Measurement) string {
	switch {
	case m.Healthy():
		return EdgeHealthy
	case m.Connect > 0:
		return EdgeBackendDead
	}
	return edgeDown
}

// surveyEdge is one edge in one round: both numbers from one socket, in seconds.
type surveyEdge struct {
	Addr      netip.AddrPort `json:"addr"`
	State     string         `json:"state"`
	Connect   float64        `json:"connect_seconds"`
	Handshake float64        `json:"handshake_seconds"`
	Err       string         `json:"err,omitempty"`
}

// SurveyRound is one round of the platform's monitor: a JSON line.
type SurveyRound struct {
	At    time.Time    `json:"at"`
	Name  string       `json:"name"`
	Edges []surveyEdge `json:"edges"`
	// Err is why the round has no edges (the name did not resolve).
	Err string `json:"err,omitempty"`
}

// Surveyor is the platform-side monitor in use: every Interval it runs Survey, hands the round
// to OnRound, keeps it for Metrics and alerts once per confirmed transition into backend-dead,
// and once when an edge so alerted is confirmed healthy again (down in between or not).
type Surveyor struct {
	Name     string
	Resolver Resolver // nil: the system resolver
	Probe    probeFunc
	Interval time.Duration
	// Rounds stops after this many rounds; 0 runs until ctx ends.
	Rounds  int
	OnRound func(SurveyRound)
	// Alerts delivers alerts (nil: none); Tracker decides them (Initial "healthy").
	Alerts  *alert.Sender
	Tracker *alert.Tracker
	Clock   clock.Clock
	Logger  *slog.Logger

	mu     sync.Mutex
	last   SurveyRound
	rounds int
	// open holds every edge whose backend-dead alert went out and whose recovery has not: its
	// recovery is told on its first confirmed healthy, whatever came between (down included).
	open map[netip.AddrPort]bool
	// queue holds the alerts Run delivers beside the rounds, so a slow webhook (its attempts,
	// timeouts and backoff) never holds the measurements; nil outside Run: sent at once.
	queue chan alert.Alert
}

// Run surveys until ctx ends or Rounds are done.
func (s *Surveyor) Run(ctx context.Context) {
	clk := s.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	if s.Tracker == nil {
		s.Tracker = &alert.Tracker{Initial: EdgeHealthy}
	}
	if s.Alerts != nil {
		queue := make(chan alert.Alert, 64)
		var wg sync.WaitGroup
		wg.Go(func() { s.deliver(ctx, queue) })
		s.queue = queue
		defer func() { s.queue = nil; close(queue); wg.Wait() }() // what the last rounds alerted is delivered
	}
	for n := 1; ctx.Err() == nil; n++ {
		s.round(ctx, clk.Now())
		if s.Rounds > 0 && n >= s.Rounds {
			return
		}
		select {
		case <-ctx.Done():
		case <-clk.After(s.Interval):
		}
	}
}

func (s *Surveyor) round(ctx context.Context, now time.Time) {
	r := SurveyRound{At: now.UTC(), Name: s.Name, Edges: []surveyEdge{}}
	ranking, err := Survey(ctx, s.Resolver, s.Name, s.Probe)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		r.Err = err.Error()
	}
	for _, m := range ranking {
		e := surveyEdge{Addr: m.Addr, State: edgeState(m), Connect: m.Connect.Seconds(), Handshake: m.Handshake.Seconds()}
		if m.Err != nil {
			e.Err = m.Err.Error()
		}
		r.Edges = append(r.Edges, e)
		s.alert(ctx, e, now)
	}
	s.mu.Lock()
	s.last, s.rounds = r, s.rounds+1
	s.mu.Unlock()
	if s.OnRound != nil {
		s.OnRound(r)
	}
}

// alert sends one alert per confirmed transition into backend-dead, and one when such an edge
// is confirmed healthy again, even if it was down in between (backend-dead → down → healthy):
// the page its backend-dead alert opened is closed. An edge that is simply down (TCP refused)
// is the DNS health check's job: that is never alerted here.
func (s *Surveyor) alert(ctx context.Context, e surveyEdge, now time.Time) {
	tr, ok := s.Tracker.Observe(e.Addr.String(), e.State)
	if !ok || s.Alerts == nil {
		return
	}
	a := alert.Alert{Source: "edgepick survey", Subject: e.Addr.String(), Kind: tr.To, From: tr.From, At: now.UTC()}
	switch {
	case tr.To == EdgeBackendDead:
		a.Summary = fmt.Sprintf("edge %s of %s accepts TCP but the TLS handshake through it fails: the forwarder is up, its backend is dead (%s)",
			e.Addr, s.Name, e.Err)
		a.Suggestion = "check the edge's route to the origin and the origin itself; take the edge out of the A set until it forwards"
		s.setOpen(e.Addr, true) // sent, delivered or not: the receiver may have it
	case tr.To == EdgeHealthy && s.setOpen(e.Addr, false):
		a.Kind = "recovered"
		a.Summary = fmt.Sprintf("edge %s of %s finishes the TLS handshake again", e.Addr, s.Name)
		if tr.From != EdgeBackendDead {
			a.Summary += fmt.Sprintf(" (alerted %s, %s since)", EdgeBackendDead, tr.From)
		}
	default:
		return
	}
	if s.queue == nil {
		s.send(ctx, a)
		return
	}
	select {
	case s.queue <- a:
	default:
		s.logger().Error("edgepick survey: alert dropped: the queue is full (the webhook is slower than the rounds)",
			"edge", e.Addr, "kind", a.Kind)
	}
}

// deliver sends the queued alerts in order until queue is closed.
func (s *Surveyor) deliver(ctx context.Context, queue <-chan alert.Alert) {
	for a := range queue {
		s.send(ctx, a)
	}
}

func (s *Surveyor) send(ctx context.Context, a alert.Alert) {
	if err := s.Alerts.Send(ctx, a); err != nil {
		s.logger().Error("edgepick survey: alert not delivered", "edge", a.Subject, "err", err)
	}
}

// setOpen records whether edge a has a backend-dead alert out without its recovery, and returns
// whether it had.
func (s *Surveyor) setOpen(a netip.AddrPort, open bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.open[a]
	if open {
		if s.open == nil {
			s.open = map[netip.AddrPort]bool{}
		}
		s.open[a] = true
	} else {
		delete(s.open, a)
	}
	return was
}

// Last is the latest round and how many rounds ran.
func (s *Surveyor) Last() (SurveyRound, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.rounds
}

func (s *Surveyor) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
