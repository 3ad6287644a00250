// Package acceptance is the end-to-end suite of zero502 lb: it builds the real zero502 binary and
// the test backend (infra/lb/testbackend), starts them as real processes on free loopback ports,
// and walks the reverse-proxy lab checker's whole scenario list (round robin, health checks,
// SIGKILLed and sick backends, timeouts, framing, hop-by-hop headers, smuggling, slow clients, the
// LB's own drain handshake) plus the admin API contract and config mode, over real sockets.
// Everything is in the _test.go files:
//
//	go test -race ./infra/lb/acceptance
//	ZERO502_BIN=/path/to/zero502 go test ./infra/lb/acceptance   # test a given binary
//	ZERO502_ACCEPTANCE_RACE=1 go test ./infra/lb/acceptance      # build the binaries with -race
//
// Scenarios wait for states by polling with deadlines; the lab's limits (out of rotation within
// 4 s, back within 5 s, 504 after the 3 s header timeout) are asserted and the measured times
// logged (-v). Independent scenarios run in parallel (8 at once unless -parallel says otherwise).
package acceptance
