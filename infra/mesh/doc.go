// Package mesh owns reachability verdicts: whether each server of a fleet should take new
// connections, decided from two kinds of evidence, as the monitoring write-up this package
// follows lays out (two layers of checks, a vote, checker servers, and "do no harm"):
//
//   - Reports: every server reports about itself (is its traffic listener up, is its service
//     running). A fresh report saying "unhealthy" makes the server Unavailable. No fresh report
//     makes it NoData, and silence is not a verdict: a NoData server stays in rotation.
//   - Probes: every server probes every neighbour the way a client would. One failed probe
//     means nothing; a witness's vote counts only after a Streak of FailStreak consecutive
//     failures. A server is Unreachable (out of rotation) only when a Quorum of reliable
//     witnesses fail it, or when a reliable checker server does. A witness that fails to see at
//     least half of its other neighbours (or reports itself unhealthy) is unreliable: its votes
//     are ignored. An ordinary server failing to see a checker means nothing. Which servers
//     are checkers is the operator's list given to every server (Node.Checkers, --checkers),
//     never what a server's report claims: a peer cannot make itself a checker.
//   - A failing pair without a quorum and without a checker accuses nobody: the side the probes
//     did not reach gets a mark naming both servers (both sides when it fails both ways), and
//     nothing is taken out of rotation.
//
// Everything is derived again from fresh data at every evaluation, so every state heals by
// itself (HealStreak successes end a failing streak; a healthy report ends Unavailable; a fresh
// report ends NoData). Route applies the last rule: a route is never empty, when every server
// in it is bad it keeps the best of them.
//
// The Evaluator is the pure core: observations in, Verdicts out, time from an injected
// infra/clock. The Node is the small real-network part behind `zero502 mesh serve`:
//
//   - The service, not the mesh port: a Node's self-report checks its real Service (a tcp://,
//     tls:// or http(s):// target such as the VPN's :443) and an optional local check command,
//     and carries Metrics (load, connections, the check's latency). Its peers probe the service
//     they are configured with for it (PeerServices) the way a user's app would, from their own
//     Source address; only a peer configured without one is probed on the mesh's GET /health.
//     No bulletin changes what is probed or routed to.
//   - It sends its report and probes to every peer as a Bulletin over HTTP, signed with the
//     mesh's shared Key (auth.go: sender, timestamp and an HMAC-SHA256 in headers; the receiver
//     takes it only from a configured peer at its configured address, fresh, once, and at most
//     one every half round, so a burst cannot make a failure streak), and serves the
//     verdicts on GET /mesh/verdicts (metrics with their age and a stale badge), the route on
//     GET /route (RouteView: configured service addresses in rotation, never empty, why each
//     server is in or out, and Ready once reports were exchanged) and Prometheus metrics on
//     GET /metrics. LBSync feeds the route to the in-house LB's admin API, taking it only signed
//     with the Key for a fresh challenge of its own (auth.go); without a key, only on loopback.
//   - Alerts (package infra/alert): one per confirmed change of a verdict that needs a person
//     (unreachable by quorum, blocked by a checker with the suggestion to change the IP,
//     unavailable, and recovered), sent by one node only: the first by name that is up.
package mesh
