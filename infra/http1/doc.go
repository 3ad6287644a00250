// Package http1 is the in-house LB's HTTP/1.1 wire format, shared by its event loops and its
// goroutine path: finding and parsing request and response heads with the RFC 9112 §6.3 rules a
// proxy needs against request smuggling (ParseRequest, ParseResponse, HeadEnd), the hop-by-hop
// header rules and the heads the LB writes (AppendUpstreamHead, AppendClientHead), and the one
// chunked framer of request and response bodies (ChunkFramer). Everything works on byte slices
// the caller owns, without allocating; the fuzz tests check that what the parser accepts is
// framed the same by the next hop.
package http1
