// Package examples embeds the shipped configs, so `zero502 demo` runs on local.yaml with nothing
// but the binary, and the invariant tests check every shipped config.
package examples

import "embed"

// Files holds every shipped example config (*.yaml).
//
//go:embed *.yaml
var Files embed.FS

// Local is examples/local.yaml: the in-house LB and three local hosts, the demo's config.
//
//go:embed local.yaml
var Local []byte

// AnyService is examples/any-service.yaml: a third-party HTTP server (python3 -m http.server)
// drained at the balancer, start-first; `zero502 demo --service python` runs it.
//
//go:embed any-service.yaml
var AnyService []byte

// The traffic layer's three tiers (`zero502 demo --traffic-layer` runs them): the apps behind two
// LB instances, the LB instances behind two edges, the edges in a DNS A record set.
var (
	//go:embed traffic-apps.yaml
	TrafficApps []byte
	//go:embed traffic-lbs.yaml
	TrafficLBs []byte
	//go:embed traffic-edges.yaml
	TrafficEdges []byte
)
