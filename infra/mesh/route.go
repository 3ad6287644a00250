package mesh

import (
	"fmt"
	"slices"
	"strings"
)

// selection is what a route hands out: its servers, best first.
type selection struct {
	Servers []string `json:"servers"`
	// Fallback is true when every server of the route was out of rotation and Servers holds the
	// best of them instead: a route is never empty.
	Fallback bool `json:"fallback"`
	// Left are the servers taken out of rotation (not in Servers unless Fallback).
	Left   []string `json:"left,omitempty"`
	Reason string   `json:"reason"`
}

// Route selects which of route's servers to hand out, given their verdicts. Servers in rotation
// come first in this order, each group in route's order: up and unmarked (the healthy ones the
// balancer should pick), up but Marked (a failing pair: both sides are still handed out), then
// Unknown (silence is not a verdict). A server without a verdict counts as Unknown.
//
// A route is never empty: when every server is Down, Route keeps the best of them rather than
// an empty list (an empty list makes client apps conclude the servers are gone and delete them).
// The best are the Down servers that still report themselves healthy (only unreachable), then
// those the fewest witnesses fail; every server tied for best is kept.
func Route(route []string, verdicts []Verdict) selection {
	by := make(map[string]Verdict, len(verdicts))
	for _, v := range verdicts {
		by[v.Server] = v
	}
	if len(route) == 0 {
		return selection{Reason: "the route has no servers; add servers to it"}
	}
	var in []string
	var down []Verdict
	for _, s := range route {
		v, ok := by[s]
		if !ok {
			v = Verdict{Server: s, State: Unknown, InRotation: true}
		}
		if v.InRotation {
			in = append(in, s)
		} else {
			down = append(down, v)
		}
	}
	var left []string
	for _, v := range down {
		left = append(left, v.Server)
	}
	if len(in) > 0 {
		slices.SortStableFunc(in, func(a, b string) int { return rotationRank(by, a) - rotationRank(by, b) })
		reason := fmt.Sprintf("%d of %d servers in rotation", len(in), len(route))
		if len(left) > 0 {
			reason += "; out of rotation: " + strings.Join(left, ", ")
		}
		return selection{Servers: in, Left: left, Reason: reason}
	}
	slices.SortStableFunc(down, func(a, b Verdict) int { return compareFallback(a, b) })
	var best []string
	for _, v := range down {
		if compareFallback(v, down[0]) != 0 {
			break
		}
		best = append(best, v.Server)
	}
	return selection{
		Servers: best, Fallback: true, Left: left,
		Reason: fmt.Sprintf("all %d servers are down; never an empty route: keeping the best available (%s)",
			len(route), strings.Join(best, ", ")),
	}
}

// rotationRank orders servers in rotation: healthy first, then marked, then silent.
func rotationRank(by map[string]Verdict, s string) int {
	v, ok := by[s]
	switch {
	case !ok || v.State == Unknown:
		return 2
	case v.Has(Marked):
		return 1
	}
	return 0
}

// compareFallback orders Down servers for the never-empty fallback: only-unreachable (the
// server itself says it is fine, so some clients may still reach it) before unavailable, then
// fewer failing witnesses.
func compareFallback(a, b Verdict) int {
	ua, ub := a.Has(Unavailable), b.Has(Unavailable)
	if ua != ub {
		if ua {
			return 1
		}
		return -1
	}
	return len(a.Failing) - len(b.Failing)
}
