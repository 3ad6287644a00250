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
//     are ignored. An ordinary server failing to see a checker means nothing.
//   - A failing pair without a quorum and without a checker accuses nobody: the side the probes
//     did not reach gets a Mark naming both servers (both sides when it fails both ways), and
//     nothing is taken out of rotation.
//
// Everything is derived again from fresh data at every evaluation, so every state heals by
// itself (HealStreak successes end a failing streak; a healthy report ends Unavailable; a fresh
// report ends NoData). Route applies the last rule: a route is never empty, when every server
// in it is bad it keeps the best of them.
//
// The Evaluator is the pure core: observations in, Verdicts out, time from an injected
// infra/clock. The Node is the small real-network part behind `zero502 mesh serve`: it probes
// its peers with an HTTPProber (GET /health), sends its report and probes to every peer as a
// Bulletin over HTTP, and serves the verdicts it derives on GET /mesh/verdicts.
package mesh
