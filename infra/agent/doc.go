// Package agent is the agent's session: an agent on customer hardware that connects out, through
// an edge (package infra/edge), to the platform's origin and holds one long-lived TLS session
// there, sending and receiving framed messages. It puts the edge choice of package
// infra/edgepick to use:
//
//   - Dial order: the chosen edge first, then the rest of the ranking, best first; with no
//     choice (one candidate, DNS refused, no edge answered a probe) the agent dials exactly as it
//     would without edgepick: the name through the system resolver, in the resolver's order.
//   - The failback Watcher runs beside every session. A SwitchReason ends the session cleanly
//     and the next dial goes to the new edge at once: a planned end never feeds the backoff.
//   - A real failure (a dial that fails, a session that breaks) is recorded as a failover in the
//     state file and waits an exponential backoff with full jitter and a cap before the next
//     dial. The ladder restarts once a session has held for stableSession (10 s): an origin
//     that completes the handshake and drops the connection climbs it as a failed dial does.
//   - Messages sent while disconnected wait in a bounded Outbox and are replayed after the
//     reconnect; a message leaves the outbox only when the server acknowledged it, and one
//     whose frame would be over MaxFrame never enters it (Send refuses it). Each carries
//     an id, so the receiver's dedupStore makes a replay harmless (at least once on the wire,
//     at most once applied).
//
// Server is the other end: an echo/ack server behind `zero502 agent-server`. It reads the edges'
// PROXY headers (origin.Listener), acknowledges every message and counts the duplicates its
// dedupStore refused to apply.
//
// The wire format is a frame per message: a 4-byte big-endian length, then a JSON document.
package agent
