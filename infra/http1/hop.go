package http1

// hopByHop are the headers that describe one connection, not the message (RFC 9110 §7.6.1),
// plus Proxy-Connection. They are never forwarded, in either direction; neither are the headers
// a Connection header names.
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
}

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
func markConnectionNamed(head []byte, fields []field, hop []bool) {
	for _, f := range fields {
		if !equalFold(f.name.of(head), "Connection") {
			continue
		}
		for v := f.value.of(head); len(v) > 0; {
			var tok []byte
			tok, v = nextToken(v)
			if equalFold(tok, "Content-Length") || equalFold(tok, "Transfer-Encoding") || equalFold(tok, "Host") {
				continue
			}
			for k, g := range fields {
				if equalFold(g.name.of(head), string(tok)) {
					hop[k] = true
				}
			}
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
// needs one. X-Forwarded-Proto follows the same rule: a trusted proxy's is kept; from anyone
// else it is dropped, and a request that came over TLS (https) gets X-Forwarded-Proto: https.
func AppendUpstreamHead(dst []byte, r *Request, clientIP []byte, keepForwarded, https bool, backend string) []byte {
	dst = append(dst, r.Method()...)
	dst = append(dst, ' ')
	dst = append(dst, r.Target()...)
	dst = append(dst, " HTTP/1.1\r\n"...)
	if r.Minor == 0 && !r.hasHost {
		dst = append(dst, "Host: "...)
		dst = append(dst, backend...)
		dst = append(dst, "\r\n"...)
	}
	xff := false
	for k := range r.fields {
		if r.hop[k] {
			continue
		}
		name, value := r.Field(k)
		if !keepForwarded && equalFold(name, "X-Forwarded-Proto") {
			continue
		}
		if equalFold(name, "X-Forwarded-For") {
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
	if _, sent := r.Get("X-Forwarded-Proto"); https && !(keepForwarded && sent) {
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
