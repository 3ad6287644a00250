package http1

// hopByHop are the headers that describe one connection, not the message (RFC 9110 §7.6.1),
// plus Proxy-Connection. They are never forwarded, in either direction; neither are the headers
// a Connection header names. Trailer is not one (RFC 9110 §6.6.2): it announces the fields of
// the trailer section, which the LB relays with the chunked body it belongs to, but for the
// fields trailerDropped names (it is dropped only where the body is decoded, see
// AppendClientHead).
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Transfer-Encoding", "Upgrade",
}

// trailerDropped says whether the LB drops the trailer field name from a chunked body it relays,
// in either direction (ChunkFramer.Relay): the fields the LB frames, routes or answers the
// message by, or sets itself in the header section, which RFC 9110 §6.5.1 keeps out of a
// trailer and a recipient that merges trailers into the header section (as some servers and
// frameworks do, RFC 9110 §6.5.2 notwithstanding) would read as the LB's. Those are the
// hop-by-hop fields, Content-Length, Host, Trailer, Expect and the forwarding headers however
// spelled (see AppendUpstreamHead): a client's X-Forwarded-For in a trailer would otherwise pass
// for the one the LB sets. Any other trailer field goes on as it came.
func trailerDropped(name []byte) bool {
	if fwd, underscore := forwardingHeader(name); fwd != notForwarding || underscore {
		return true
	}
	return isHopByHop(name) || equalFold(name, "Content-Length") || equalFold(name, "Host") ||
		equalFold(name, "Trailer") || equalFold(name, "Expect")
}

// maxDroppedTrailer is the length of the longest name trailerDropped drops: a longer one is
// kept before all of it is read.
var maxDroppedTrailer = func() int {
	n := len("Content-Length")
	for _, h := range append(hopByHop, forwardingNames[:]...) {
		n = max(n, len(h))
	}
	return n
}()

func isHopByHop(name []byte) bool {
	for _, h := range hopByHop {
		if equalFold(name, h) {
			return true
		}
	}
	return false
}

// markConnectionNamed sets hop[k] for every field whose name a Connection header lists, except
// the fields that frame the message or route it (Content-Length, Transfer-Encoding, Host): the
// LB frames the message it forwards by them, so the next hop must see them too. Dropping
// Content-Length from a request with a body would let its body pass for another request
// (request smuggling); dropping it, or Transfer-Encoding, from a response would leave the
// client reading until the close of a kept-alive connection.
//
// Its cost is linear in the head whatever it holds: the field names are indexed once in a
// case-insensitive hash table, each Connection token is looked up in it once, and the fields
// are marked in one last pass. (Comparing every token with every field was quadratic: a 64 KiB
// head of 16K tokens and 8K fields made some 134M comparisons.)
func markConnectionNamed(head []byte, fields []field, hop []bool) {
	conn := -1
	for k, f := range fields {
		if equalFold(f.name.of(head), "Connection") {
			conn = k
			break
		}
	}
	if conn < 0 {
		return
	}
	// slots: 0 empty, k+1 the first field of a name, -(k+1) once a Connection token named it;
	// built at the first token that is not a hop-by-hop name already (keep-alive, upgrade:
	// those fields are dropped anyway), so the common Connection header costs no table
	var (
		stack [256]int32
		slots []int32
		mask  uint32
		named bool
	)
	for _, f := range fields[conn:] {
		if !equalFold(f.name.of(head), "Connection") {
			continue
		}
		for v := f.value.of(head); len(v) > 0; {
			var tok []byte
			tok, v = nextToken(v)
			if len(tok) == 0 || isHopByHop(tok) || equalFold(tok, "Content-Length") || equalFold(tok, "Host") {
				continue
			}
			if slots == nil {
				size := len(stack)
				for size < 2*len(fields) {
					size *= 2
				}
				slots = stack[:]
				if size > len(stack) {
					slots = make([]int32, size)
				}
				mask = uint32(size - 1)
				for k, g := range fields {
					if i, found := lookupName(head, fields, slots, mask, g.name.of(head)); !found {
						slots[i] = int32(k + 1)
					}
				}
			}
			if i, found := lookupName(head, fields, slots, mask, tok); found && slots[i] > 0 {
				slots[i], named = -slots[i], true
			}
		}
	}
	if !named {
		return
	}
	for k, f := range fields {
		if i, _ := lookupName(head, fields, slots, mask, f.name.of(head)); slots[i] < 0 {
			hop[k] = true
		}
	}
}

// lookupName finds name (case-insensitive) in the open-addressing table slots of the names of
// fields (see markConnectionNamed): its slot and true, or the empty slot where it goes and false.
func lookupName(head []byte, fields []field, slots []int32, mask uint32, name []byte) (uint32, bool) {
	h := uint32(2166136261) // FNV-1a of the lower-case name
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = (h ^ uint32(c)) * 16777619
	}
	for i := h & mask; ; i = (i + 1) & mask {
		k := slots[i]
		if k == 0 {
			return i, false
		}
		if k < 0 {
			k = -k
		}
		if equalFold(fields[k-1].name.of(head), name) {
			return i, true
		}
	}
}

// AppendUpstreamHead appends the head the LB sends to a backend for r: the request line as the
// client sent it but always HTTP/1.1 (the upstream connection is the LB's, kept alive), every
// end-to-end header in order (Host untouched), and X-Forwarded-For. With keepForwarded (the
// client is a trusted proxy) clientIP is appended to whatever the client sent (several
// X-Forwarded-For lines are joined in order, in the place of the first); without it, what the
// client sent is dropped and X-Forwarded-For is clientIP alone, so a client cannot forge the
// address a backend sees. An HTTP/1.0 request without Host gets Host: backend, since HTTP/1.1
// needs one (an absolute-form target's authority when it has one: a Host that differs from it
// is refused, RFC 9112 §3.2.2). X-Forwarded-Proto follows the same rule: a trusted proxy's is
// kept; from anyone else it is dropped, and a request that came over TLS (https) without one
// kept gets X-Forwarded-Proto: https (a trusted proxy's named in its Connection header is not
// kept: it described that proxy's hop).
// Forwarded (RFC 7239) and X-Real-IP, which backends also read the client's address from, and
// X-Forwarded-Host, -Port, -Prefix, -Scheme and -Ssl, which frameworks build absolute URLs from
// (a password-reset link pointing at the client's own host), are kept from a trusted proxy and
// dropped from anyone else (the LB sets none of them: the backend reads Host). Any of these
// spelled with an underscore (X_Forwarded_For, X-Real_IP) is dropped, trusted or not: CGI, WSGI
// and PHP backends read '_' and '-' alike, so it would pass for the header the LB sets or keeps.
func AppendUpstreamHead(dst []byte, r *Request, clientIP []byte, keepForwarded, https bool, backend string) []byte {
	dst = append(dst, r.Method()...)
	dst = append(dst, ' ')
	dst = append(dst, r.Target()...)
	dst = append(dst, " HTTP/1.1\r\n"...)
	if r.Minor == 0 && !r.hasHost {
		dst = append(dst, "Host: "...)
		if _, auth, ok := absoluteAuthority(r.Target()); ok {
			dst = append(dst, auth...) // the host it names (RFC 9112 §3.2.2), not another
		} else {
			dst = append(dst, backend...)
		}
		dst = append(dst, "\r\n"...)
	}
	xff, proto := false, false
	for k := range r.fields {
		if r.hop[k] {
			continue
		}
		name, value := r.Field(k)
		fwd, underscore := forwardingHeader(name)
		if underscore || fwd != notForwarding && fwd != forwardedFor && !keepForwarded {
			continue
		}
		if fwd == forwardedFor {
			if xff || !keepForwarded {
				continue
			}
			xff = true
			dst = append(dst, "X-Forwarded-For: "...)
			for j := k; j < len(r.fields); j++ {
				if n, v := r.Field(j); !r.hop[j] && equalFold(n, "X-Forwarded-For") && len(v) > 0 {
					dst = append(dst, v...)
					dst = append(dst, ", "...)
				}
			}
			dst = append(dst, clientIP...)
			dst = append(dst, "\r\n"...)
			continue
		}
		proto = proto || fwd == forwardedProto
		dst = append(dst, name...)
		dst = append(dst, ": "...)
		dst = append(dst, value...)
		dst = append(dst, "\r\n"...)
	}
	if !xff {
		dst = append(dst, "X-Forwarded-For: "...)
		dst = append(dst, clientIP...)
		dst = append(dst, "\r\n"...)
	}
	if https && !proto { // none kept: from no one, or named in Connection (hop-by-hop)
		dst = append(dst, "X-Forwarded-Proto: https\r\n"...)
	}
	if r.Upgrade {
		dst = append(dst, "Connection: Upgrade\r\n"...) // its Upgrade header went in its place
	}
	if r.Chunked {
		dst = append(dst, "Transfer-Encoding: chunked\r\n"...) // the body is relayed in its framing
	}
	return append(dst, "\r\n"...)
}

// The request headers a backend reads the client's address or scheme from: the LB sets
// X-Forwarded-For and X-Forwarded-Proto, and keeps any of them only from a trusted proxy (see
// AppendUpstreamHead).
// X-Forwarded-Host and the others after realIP are what Rack, Django, Spring and Werkzeug's
// ProxyFix build the request's own URL from.
const (
	notForwarding = iota
	forwardedFor
	forwardedProto
	forwarded
	realIP
	forwardedHost
	forwardedPort
	forwardedPrefix
	forwardedScheme
	forwardedSSL
)

var forwardingNames = [...]string{
	forwardedFor:    "X-Forwarded-For",
	forwardedProto:  "X-Forwarded-Proto",
	forwarded:       "Forwarded",
	realIP:          "X-Real-IP",
	forwardedHost:   "X-Forwarded-Host",
	forwardedPort:   "X-Forwarded-Port",
	forwardedPrefix: "X-Forwarded-Prefix",
	forwardedScheme: "X-Forwarded-Scheme",
	forwardedSSL:    "X-Forwarded-Ssl",
}

// forwardingHeader says which of forwardingNames name is (notForwarding for none), compared
// case-insensitively with '_' read as '-', and whether name has an underscore.
func forwardingHeader(name []byte) (kind int, underscore bool) {
	for k := forwardedFor; k < len(forwardingNames); k++ {
		if h := forwardingNames[k]; len(name) == len(h) { // most names end here, without a call
			if eq, us := equalFoldDash(name, h); eq {
				return k, us
			}
		}
	}
	return notForwarding, false
}

// equalFoldDash is equalFold reading '_' in b as '-', and says whether b had one.
func equalFoldDash(b []byte, s string) (eq, underscore bool) {
	if len(b) != len(s) {
		return false, false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == '_' {
			x, underscore = '-', true
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false, false
		}
	}
	return true, underscore
}
