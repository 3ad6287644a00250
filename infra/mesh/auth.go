package mesh

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The mesh's authentication: one shared key (the same on every server and on lb-sync) signs
// both what the servers say to each other and what they tell a balancer.
//
// Bulletins. Every POST /mesh/bulletin carries three headers:
//
//	X-Zero502-Mesh-Sender:    the sender's name, as the receiver's --peers lists it
//	X-Zero502-Mesh-Timestamp: the sender's clock at sending, Unix nanoseconds (decimal)
//	X-Zero502-Mesh-Signature: "v1=" and the hex HMAC-SHA256, under the mesh's shared key, of
//	                          "zero502-mesh-bulletin-v1\n" sender "\n" receiver "\n" timestamp "\n" body
//
// The receiver takes a bulletin only from a configured peer, from that peer's configured
// address, whose report speaks for the sender, signed with the key (for this receiver: the
// signature names it, so a bulletin captured on its way to another server is refused here),
// stamped within BulletinWindow of the receiver's clock, not before the receiver started (Open)
// and later than the last bulletin it took from that sender (so a captured bulletin is not
// taken twice, also across a restart of the receiver, which forgets the last timestamps), and
// arriving at least half a round (ProbeEvery/2) after that one (so a key holder cannot make a
// failure streak out of bulletins sent back to back: a streak takes FailStreak rounds). A
// bulletin failing any check is refused (401: signature, time, replay; 403: who sent it; 429:
// too soon) and changes nothing.
//
// The start floor compares the sender's stamp with the receiver's clock, so it is as exact as
// the two clocks agree: a sender whose clock runs d ahead of the receiver's stamps its bulletins
// d late, and one captured in the last d before the receiver restarted can be taken once more
// after it; a sender whose clock runs d behind has its bulletins refused for the first d after
// the receiver starts. Both are within BulletinWindow, and both are zero with NTP.
//
// The route. lb-sync (LBSync) sends every GET /route with a fresh random challenge, and a node
// with a key answers it signed:
//
//	X-Zero502-Mesh-Challenge: 32 hex digits from crypto/rand, new for every request
//	X-Zero502-Mesh-Signature: "v1=" and the hex HMAC-SHA256, under the key, of
//	                          "zero502-mesh-route-v1\n" challenge "\n" body
//
// over the exact bytes of the answer's body. An LBSync with the key takes a route only with
// the signature for its own challenge, so neither whoever answers on the node's address (a
// local user binding the port while the node restarts, someone on the path) nor a replay of a
// genuine answer can put an address into the balancer; no clock is involved. An LBSync
// without a key runs only against a mesh URL on loopback (Validate), as a node without a key
// runs only on loopback.
const (
	headerSender    = "X-Zero502-Mesh-Sender"
	headerTimestamp = "X-Zero502-Mesh-Timestamp"
	headerSignature = "X-Zero502-Mesh-Signature"
	headerChallenge = "X-Zero502-Mesh-Challenge"

	signatureScheme = "v1="
	bulletinDomain  = "zero502-mesh-bulletin-v1\n"
	routeDomain     = "zero502-mesh-route-v1\n"
)

// DefaultBulletinWindow is how far a bulletin's timestamp may be from the receiver's clock.
const DefaultBulletinWindow = 30 * time.Second

// minKeyLength is the shortest mesh key accepted, in bytes.
const minKeyLength = 16

// signWith is a signature header's value: "v1=" and the hex HMAC-SHA256 under key of domain,
// then each field followed by "\n", then body. The domain keeps a signature for one purpose
// (a bulletin, a route) from ever being valid for another.
func signWith(key []byte, domain string, body []byte, fields ...string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain))
	for _, f := range fields {
		m.Write([]byte(f + "\n"))
	}
	m.Write(body)
	return signatureScheme + hex.EncodeToString(m.Sum(nil))
}

// signatureValid reports whether header (an X-Zero502-Mesh-Signature value) is want (a
// signWith value), in constant time; signed is false when header is not a "v1=" signature at
// all.
func signatureValid(header, want string) (signed, valid bool) {
	got, ok := strings.CutPrefix(header, signatureScheme)
	if !ok {
		return false, false
	}
	return true, hmac.Equal([]byte(got), []byte(strings.TrimPrefix(want, signatureScheme)))
}

// sign is the X-Zero502-Mesh-Signature value of body sent by sender to receiver at timestamp
// (Unix nanoseconds) under key.
func sign(key []byte, sender, receiver string, timestamp int64, body []byte) string {
	return signWith(key, bulletinDomain, body, sender, receiver, strconv.FormatInt(timestamp, 10))
}

// signRoute is the X-Zero502-Mesh-Signature value of a GET /route answer's body, for the
// request's challenge, under key.
func signRoute(key []byte, challenge string, body []byte) string {
	return signWith(key, routeDomain, body, challenge)
}

// signRequest sets the authentication headers of a bulletin request.
func signRequest(req *http.Request, key []byte, sender, receiver string, timestamp int64, body []byte) {
	req.Header.Set(headerSender, sender)
	req.Header.Set(headerTimestamp, strconv.FormatInt(timestamp, 10))
	if key != nil {
		req.Header.Set(headerSignature, sign(key, sender, receiver, timestamp, body))
	}
}

// refusal is why a bulletin is refused: the HTTP status and the reason, for the log line and
// the answer.
type refusal struct {
	status int
	reason string
}

func (r *refusal) Error() string { return r.reason }

func unauthorized(format string, args ...any) *refusal {
	return &refusal{http.StatusUnauthorized, fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *refusal {
	return &refusal{http.StatusForbidden, fmt.Sprintf(format, args...)}
}

// authenticate checks a bulletin request's sender, source address, time and signature (the
// replay guard is applied by accept, atomically with taking the bulletin). It returns the
// sender and its timestamp.
func (n *Node) authenticate(r *http.Request, body []byte) (sender string, ts int64, _ *refusal) {
	sender = r.Header.Get(headerSender)
	switch _, peer := n.Peers[sender]; {
	case sender == "":
		return "", 0, unauthorized("no %s header: every bulletin names its sender", headerSender)
	case sender == n.Name:
		return sender, 0, forbidden("sender %q is this server's own name", sender)
	case !peer:
		return sender, 0, forbidden("sender %q is not a configured peer (--peers of %s)", sender, n.Name)
	}
	if err := n.fromPeerAddress(r, sender); err != nil {
		return sender, 0, forbidden("%v", err)
	}
	ts, err := strconv.ParseInt(r.Header.Get(headerTimestamp), 10, 64)
	if err != nil {
		return sender, 0, unauthorized("%s %q: not Unix nanoseconds", headerTimestamp, r.Header.Get(headerTimestamp))
	}
	if skew := n.Clock.Now().Sub(time.Unix(0, ts)); skew > n.BulletinWindow || skew < -n.BulletinWindow {
		return sender, ts, unauthorized("stale: stamped %s, %s from this server's clock, outside the window of ±%s (replayed, or a clock off: run NTP)",
			time.Unix(0, ts).UTC().Format(time.RFC3339Nano), skew.Round(time.Millisecond), n.BulletinWindow)
	}
	if n.Key == nil {
		return sender, ts, nil // loopback only, checked by Validate
	}
	signed, valid := signatureValid(r.Header.Get(headerSignature), sign(n.Key, sender, n.Name, ts, body))
	if !signed {
		return sender, ts, unauthorized("no %s %s...: this mesh signs every bulletin with its key", headerSignature, signatureScheme)
	}
	if !valid {
		return sender, ts, unauthorized("bad signature: not signed with this mesh's key for this receiver (every server needs the same --key-file)")
	}
	return sender, ts, nil
}

// fromPeerAddress checks that r comes from one of the addresses of sender's configured host.
func (n *Node) fromPeerAddress(r *http.Request, sender string) error {
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return fmt.Errorf("sender %s: remote address %q unreadable: %w", sender, r.RemoteAddr, err)
	}
	host, _, _ := net.SplitHostPort(n.Peers[sender])
	from := remote.Addr().Unmap()
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Unmap() == from {
			return nil
		}
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), n.ProbeTimeout)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fmt.Errorf("sender %s: its configured host %q does not resolve: %w", sender, host, err)
		}
		for _, ip := range ips {
			if ip.Unmap() == from {
				return nil
			}
		}
	}
	return fmt.Errorf("sender %s: sent from %s, not from its configured address %s (--peers); a server sends from its --listen address, or --source", sender, from, host)
}

// taken is what a receiver remembers of the last bulletin it took from a sender.
type taken struct {
	ts int64     // the sender's timestamp (the replay guard)
	at time.Time // its arrival, on this server's clock (one bulletin a round)
}

// accept applies the replay guard and the one-bulletin-a-round rule to a bulletin from sender
// stamped ts and arriving at now. ts must not be before this node started (401 otherwise: the
// memory below is lost with a restart, so a bulletin captured before it would pass once more)
// and must be later than the last bulletin taken from sender (401 otherwise: of two copies of
// one bulletin only the first passes). And it must arrive at least half a round
// (--probe-every/2) after the last one taken from sender (429 otherwise): each
// bulletin advances every streak it carries a probe for by one, and a sender sends one a round,
// so without this a key holder could send --fail-streak bulletins back to back and make a whole
// failure streak (a checker: take any server out) in milliseconds instead of --fail-streak
// rounds. An honest peer's bulletins arrive a whole round apart (it waits --probe-every after
// its previous round's bulletins were answered). Only a bulletin taken is remembered, so refused
// ones do not push the next one back. The memory is one pair per configured peer.
func (n *Node) accept(sender string, ts int64, now time.Time) *refusal {
	n.authMu.Lock()
	defer n.authMu.Unlock()
	if ts < n.started {
		return unauthorized("replayed or delayed: stamped %s, before this server started at %s; a bulletin sent before "+
			"a restart is not taken after it (if %s's clock is behind this server's, run NTP)",
			time.Unix(0, ts).UTC().Format(time.RFC3339Nano), time.Unix(0, n.started).UTC().Format(time.RFC3339Nano), sender)
	}
	last, ok := n.lastBulletin[sender]
	if ok && ts <= last.ts {
		return unauthorized("replayed: stamped %d, not later than the last bulletin taken from %s (%d)", ts, sender, last.ts)
	}
	if gap := now.Sub(last.at); ok && gap < n.ProbeEvery/2 {
		return &refusal{http.StatusTooManyRequests, fmt.Sprintf("too soon: %s after the last bulletin taken from %s, under half of --probe-every %s; "+
			"a server sends one bulletin a round and a streak counts rounds, so this one counts nothing (give every server the same --probe-every)",
			gap.Round(time.Millisecond), sender, n.ProbeEvery)}
	}
	n.lastBulletin[sender] = taken{ts: ts, at: now}
	return nil
}

// errNoKey says a mesh node, or an lb-sync, off loopback has no key.
var errNoKey = errors.New("no mesh key")
