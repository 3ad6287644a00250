// Package edgepick is the agent's side of the edge layer: which edge to connect to. The edges
// (package infra/edge) are disposable L4 forwarders in front of the origin; the agent reaches the
// origin through a DNS name whose A record set is the list of edges. This package owns the
// choice among them, the state file that keeps it across restarts, the failback watcher that runs
// beside the active session, and the platform's view of the same thing.
//
// The rules, and why (see the write-up, "Descoberta: o conjunto A é a lista" onwards):
//
//   - Discovery: the A record set is the list. It is resolved through the system resolver
//     (net.DefaultResolver), the one real traffic uses, so it returns the same list; a Resolver is
//     a one-method interface so tests give a fixed list.
//   - Failover is not choosing. A client already tries the addresses of the set and spreads its
//     connect timeout over them; that picks whichever answers first, not the best. So the agent
//     measures: each address gets a Probe, a full TLS handshake and not a TCP connect (an edge
//     that accepts and forwards nothing answers a connect exactly like one that works). One
//     socket gives two numbers: Connect (the round trip to the edge) and Handshake (through the
//     tunnel to the origin and back). Health and ranking depend on the second.
//   - Each probe has its own budget and they run in parallel: a silent edge can hang a handshake
//     past the connect timeout, so the per-address budget sits beside it, not inside it.
//   - The whole Ranking is kept, not only the winner: the chosen address, the ordered list and the
//     Set they were measured from go to the agent's State file (written atomically), so a restart
//     is cheap and a failover survives a restart instead of returning to the address that just
//     failed.
//   - Invalidate by the set, not by the choice: an edge added or removed makes the measurement
//     stale even when the chosen address is still in the set.
//   - Nothing to choose, nothing done: with fewer than two candidates the mechanism is skipped.
//   - The choice never becomes a new failure mode: DNS refuses, nobody answers, the state file
//     cannot be read or written: every path ends in "no choice" (Choose returns false and the
//     caller connects exactly as it did before this package existed) with a log line saying why.
//
// The Watcher runs beside the active session and does two things only: it probes the addresses
// ranked above the current one with the same full handshake, and it re-measures everything when
// the last measurement is stale. It waits a fully jittered interval (5 minutes by default) between
// rounds, so a fleet's probes do not synchronise; it wants a Streak of two successes before going
// back (one success is an edge that just restarted), and a gain past two thresholds, 20 ms AND
// 25 % (absolute alone would approve 100 → 79 ms, relative alone 4 → 3 ms; two edges in one data
// centre differ by under a millisecond and would otherwise swap daily), a gain that holds on each
// probe of the streak: the candidate's slowest of its last Streak probes against the current
// edge's best of its last three, so one slow probe of the current edge is jitter, not a reason to
// move. A switch is reported as a
// SwitchReason, a planned session end and not an error, so it never feeds the reconnect backoff
// ladder.
//
// Survey is the platform's side: resolve the name the way the agent does and probe every edge,
// both numbers from one socket, health from the handshake. The Surveyor runs it every interval,
// keeps the last round for Prometheus metrics, and alerts (package infra/alert) once per
// confirmed transition into EdgeBackendDead (TCP connects, the handshake fails: a forwarder up
// with a dead backend) and once when such an edge recovers.
//
// Known gaps, accepted and not fixed here:
//
//   - An address that is down during a full measurement is ranked last (failed) and only
//     rediscovered at the next full measurement: failback rounds probe only addresses ranked
//     above the current one.
//   - The DNS TTL is a floor on how fast an edge leaves rotation: an edge removed from the A set
//     is still a candidate until the resolver's cached answer expires. That is the price of
//     letting the A set be the list.
//
// Waits (the watcher's interval, a state file's age) use an injected clock (infra/clock); socket
// timings (connect, handshake, budgets) are real time.
package edgepick
