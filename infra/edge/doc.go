// Package edge is zero502's L4 edge: disposable TCP forwarders in front of an origin, so the
// origin's address never appears on the path clients use, and the origin-side half that reads
// who the client was. It owns four things:
//
//   - The Forwarder (edge side) accepts TCP, picks one of its upstreams (the origin, or its LB
//     instances: the in-rotation one with the fewest open connections), dials it, writes a
//     PROXY protocol v2 header (source: the client's address as the edge measured it;
//     destination: the address the client connected to) and then copies bytes both ways until both directions end, propagating
//     half-close and closing on silence in both directions (IdleTimeout). It sees ciphertext and
//     never parses the payload. On ctx cancel it drains like every zero502 server
//     (docs/ARCHITECTURE.md, "The drain contract"): it keeps forwarding for Drain while it
//     reports draining (Draining, and its optional TCP health listener refuses connections),
//     long enough to leave the DNS A set (invariant I6); then it stops accepting and lets open
//     connections finish within Shutdown. Each upstream has a health standing (infra/standing,
//     the LB's state machine for its backends): active checks (TCP, or HTTP behind a PROXY
//     header, where a 503 means the LB instance drains), passive ejection when a dial fails
//     (the next upstream is tried: no client byte was sent yet), connects in progress to an
//     upstream that is ejected meanwhile abandoned for another (reconnect.go), and an admin
//     API with the LB's wire type and write semantics (/admin/upstreams). Its health listener
//     refuses while no upstream is in rotation.
//   - The origin.Listener (origin side) sniffs, it does not require: the first bytes of each
//     connection are peeked; a PROXY v2 (or v1) header is parsed and stripped, anything else (a
//     TLS ClientHello, plain text) is given back to the stream untouched, so installing the
//     parser and turning on the header at the edges are two independent steps. A header with the
//     right signature and a bad body closes the connection with a log line.
//   - Claim versus measurement: every accepted connection has a origin.Peer with two separate fields,
//     Claimed (what the header says the client is: a claim, which a forged header can make lie)
//     and Measured (the socket's remote address: the machine the bytes came from). Log lines
//     carry both under those names. Nothing here trusts the claim for anything but logging;
//     identity comes from the peer's certificate, end to end through the edge.
//   - The innerMap and the Relay: once the origin hands a connection to a local backend over
//     loopback, the backend only sees 127.0.0.1:port. The Relay (accept through the
//     origin.Listener, dial the backend, copy both ways) registers the inner connection's local
//     address (the peer the backend sees) in an innerMap, removed on close, so the backend can
//     Lookup the real client.
//
// Firewall is the fifth, for an edge whose forwarder runs in a container with a published port:
// the rules belong in DOCKER-USER, not INPUT (published ports never traverse INPUT), with an
// ESTABLISHED,RELATED accept first (the chain sees both directions, so replies to the host's own
// outbound probes on the same port would be dropped), then the allow list, then a drop.
//
// The Forwarder has two engines with one policy: on Linux, event loops (loop_linux.go: epoll,
// one loop per P, non-blocking connect, raw non-blocking reads and writes, no goroutine per
// connection); elsewhere, and in the tests under ZERO502_TEST_EDGE_ENGINE=goroutines, a
// goroutine per connection and one per direction (forward.go, copy.go). Both call the same
// upstream pick, ejection, reconnect rule, counts, log lines and drain phases.
//
// A connection that opens and closes without the client sending a byte (health checks do this
// constantly) writes no log line; it is only counted (Counts.Empty).
//
// Header encoding and parsing is github.com/pires/go-proxyproto. Time that the drain waits on is
// injected (infra/clock); socket timeouts (connect, idle, header) are real time.
package edge
