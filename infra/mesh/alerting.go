package mesh

import (
	"context"
	"fmt"
	"strings"

	"github.com/zero502/zero502/infra/alert"
)

// Alert classes: the verdict changes that need a person. Marked and NoData need none (a marked
// pair accuses nobody, silence is not a verdict): they count as alertOK.
const (
	alertOK          = "ok"
	alertUnavailable = "unavailable" // its own report says its service is down
	alertUnreachable = "unreachable" // a quorum of reliable witnesses cannot reach it
	alertBlocked     = "blocked"     // a checker cannot reach it: its address is likely blocked
)

// alertClass is what v means for a person.
func alertClass(v Verdict) string {
	switch {
	case v.Has(Unavailable):
		return alertUnavailable
	case v.Has(Unreachable) && v.BlockedBy != "":
		return alertBlocked
	case v.Has(Unreachable):
		return alertUnreachable
	}
	return alertOK
}

// alertChanges feeds every verdict to the Tracker (every node does, so any node can take over)
// and queues one alert per confirmed transition, when this node is the mesh's alerter: the
// first server by name, other than the subject, that its view has Up. Every node runs the
// same rule on the same bulletins, so one alert goes out per transition, not one per node.
func (n *Node) alertChanges() {
	s := n.Snapshot()
	for _, v := range s.Verdicts {
		tr, ok := n.Tracker.Observe(v.Server, alertClass(v))
		if !ok || n.Alerts == nil || alerter(s.Verdicts, v.Server) != n.Name {
			continue
		}
		a := alertFor(n.Name, tr.To, tr.From, v)
		a.At = s.At
		select {
		case n.alerts <- a:
		default:
			n.Logger.Error("mesh alert dropped: the queue is full (the webhook is slower than the verdicts)",
				"server", n.Name, "subject", v.Server, "kind", a.Kind)
		}
	}
}

// alerter is the server that alerts about subject: the first by name, other than subject, whose
// verdict is Up; "" when none is.
func alerter(vs []Verdict, subject string) string {
	for _, v := range vs { // sorted by name
		if v.Server != subject && v.State == Up {
			return v.Server
		}
	}
	return ""
}

// deliver sends the queued alerts in order until ctx ends.
func (n *Node) deliver(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-n.alerts:
			if err := n.Alerts.Send(ctx, a); err != nil && ctx.Err() == nil {
				n.Logger.Error("mesh alert not delivered", "server", n.Name, "subject", a.Subject, "kind", a.Kind, "err", err)
			}
		}
	}
}

func alertFor(source, to, from string, v Verdict) alert.Alert {
	a := alert.Alert{Source: "mesh " + source, Subject: v.Server, Kind: to, From: from}
	switch to {
	case alertUnreachable:
		a.Summary = fmt.Sprintf("%s is unreachable from %d of your servers (%s): %s", v.Server, len(v.Failing),
			strings.Join(v.Failing, ", "), v.Reason)
		a.Suggestion = "it is out of rotation; check its network and whether its address is blocked where those servers are"
	case alertBlocked:
		a.Summary = fmt.Sprintf("checker %s cannot reach %s: its address is likely blocked (%s)", v.BlockedBy, v.Server, v.Reason)
		a.Suggestion = fmt.Sprintf("change %s's IP address; it is out of rotation while the route has an alternative", v.Server)
	case alertUnavailable:
		a.Summary = fmt.Sprintf("%s reports its service down: %s", v.Server, v.Reason)
		a.Suggestion = "fix the service; it returns to rotation by itself once its report is healthy"
	default:
		a.Kind = "recovered"
		a.Summary = fmt.Sprintf("%s is back (was %s): %s", v.Server, from, v.Reason)
	}
	return a
}
