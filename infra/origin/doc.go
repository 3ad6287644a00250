// Package origin owns what a server behind PROXY-speaking edges learns from a connection's
// first bytes: the sniff that tells a PROXY v1 or v2 header from anything else (SniffHeader),
// the list of peers trusted to send one (ParseTrusted, Trusts), and the Listener that strips
// the header and keeps the two facts about the peer apart: the client the header claims and the
// address the bytes were measured from (Peer). The edge's origin relay, the agent's server and
// the in-house LB's PROXY input all read headers through it: one parser, one trust rule.
package origin
