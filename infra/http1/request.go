package http1

import (
	"bytes"
)

// Request is one parsed client request head. Its spans point into Head, which aliases the
// connection's read buffer: a Request is valid only until the next read on that connection.
type Request struct {
	// Head is the raw head, request line through the empty line.
	Head []byte
	// Minor is the HTTP/1.x minor version (0 or 1).
	Minor int
	// ContentLength is the body length; 0 when there is no body or it is chunked.
	ContentLength int64
	// Chunked is true for a body in chunked coding (Transfer-Encoding: chunked, the only coding
	// accepted): its length is known only when it ends (see ChunkFramer).
	Chunked bool
	// Close is true when the client wants the connection closed after the response
	// (Connection: close, or HTTP/1.0 without keep-alive; the LB closes every HTTP/1.0 conn).
	Close bool

	hasHost bool
	// expect is true for Expect: 100-continue: the LB answers it itself (the header is not
	// forwarded) when it is ready to read the body.
	ExpectContinue bool
	// upgrade is true for a request that asks to switch protocols (Upgrade, with Connection
	// naming it, HTTP/1.1, no body): its Upgrade header is forwarded, and a 101 answer turns the
	// connection into a tunnel (tunnel.go).
	Upgrade        bool
	method, target span
	fields         []field
	// hop marks fields that are hop-by-hop (fixed list or named in Connection).
	hop []bool
}

// Method is the request method.
func (r *Request) Method() []byte { return r.method.of(r.Head) }

// Target is the request target as sent.
func (r *Request) Target() []byte { return r.target.of(r.Head) }

// NumFields is how many header lines the request has.
func (r *Request) NumFields() int { return len(r.fields) }

// Field returns header line i.
func (r *Request) Field(i int) (name, value []byte) {
	f := r.fields[i]
	return f.name.of(r.Head), f.value.of(r.Head)
}

// Get returns the first value of the header named name (case-insensitive).
func (r *Request) Get(name string) ([]byte, bool) {
	for _, f := range r.fields {
		if equalFold(f.name.of(r.Head), name) {
			return f.value.of(r.Head), true
		}
	}
	return nil, false
}

// HasBody reports whether a body follows the head.
func (r *Request) HasBody() bool { return r.ContentLength > 0 || r.Chunked }

// Idempotent reports whether the request may be replayed on another backend: GET or HEAD
// without a body.
func (r *Request) Idempotent() bool {
	m := r.Method()
	return !r.HasBody() && (string(m) == "GET" || string(m) == "HEAD")
}

// IsHead reports whether the method is HEAD (its response has no body).
func (r *Request) IsHead() bool { return string(r.Method()) == "HEAD" }

func (r *Request) Reset() {
	r.Head = nil
	r.Minor, r.ContentLength, r.Chunked, r.Close, r.hasHost, r.ExpectContinue, r.Upgrade = 0, 0, false, false, false, false, false
	r.fields = r.fields[:0]
	r.hop = r.hop[:0]
}

// MaxRequestFields is how many header lines a request may have (HAProxy's default is 101, many
// proxies use 100); a request with more is refused with 431, whatever its size in bytes.
const MaxRequestFields = 100

// ParseRequest parses a whole request head (as found by HeadEnd) into r, enforcing the RFC 9112
// §6.3 framing rules a proxy needs against request smuggling:
//   - Transfer-Encoding in a request: only one, saying exactly chunked, in HTTP/1.1, without
//     Content-Length; anything else is 400 (an unknown or stacked coding, repeated, both);
//   - Content-Length that is repeated, a list, signed or not a number: 400;
//   - obs-fold, whitespace before the colon, bare LF, control characters: 400;
//   - HTTP/1.1 without exactly one Host: 400;
//   - an absolute-form target whose authority is not its Host (RFC 9112 §3.2.2: the client
//     must send them identical; a backend that reads the target's and one that reads Host
//     would serve two different hosts): 400;
//   - more than MaxRequestFields header lines: 431.
func ParseRequest(head []byte, r *Request) error {
	r.Reset()
	r.Head = head
	i := SkipEmptyLines(head)
	eol := bytes.IndexByte(head[i:], '\n')
	if eol < 0 {
		return errIncomplete
	}
	eol += i
	if eol == i || head[eol-1] != '\r' {
		return badRequest("bare LF line ending")
	}
	line := head[i : eol-1]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return badRequest("malformed request line")
	}
	for _, c := range line[:sp1] {
		if !tchar[c] {
			return badRequest("method is not a token")
		}
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return badRequest("malformed request line")
	}
	for _, c := range rest[:sp2] {
		if c <= ' ' || c == 0x7f {
			return badRequest("bad character in the request target")
		}
	}
	version := rest[sp2+1:]
	if len(version) != 8 || string(version[:7]) != "HTTP/1." || (version[7] != '0' && version[7] != '1') {
		if len(version) == 8 && string(version[:5]) == "HTTP/" {
			return &ParseError{Status: 505, Reason: "HTTP version not supported"}
		}
		return badRequest("malformed HTTP version")
	}
	if string(line[:sp1]) == "CONNECT" {
		// A CONNECT is a tunnel, not an exchange (RFC 9110 §9.3.6; a 2xx makes the connection
		// one, RFC 9112 §6.3): the LB opens none, and one forwarded as an exchange would frame
		// the bytes after it, which a hop in front that tunnels them reads as no request at all.
		return &ParseError{Status: 501, Reason: "CONNECT is not supported: the LB opens no tunnel"}
	}
	r.method = span{i, i + sp1}
	r.target = span{i + sp1 + 1, i + sp1 + 1 + sp2}
	r.Minor = int(version[7] - '0')

	var err error
	r.fields, err = parseFields(head, eol+1, r.fields, MaxRequestFields)
	if err != nil {
		return err
	}

	var (
		hosts, cls, tes int
		host            []byte
		teChunked       bool
		upgradeField    = -1
		connUpgrade     bool
	)
	r.Close = r.Minor == 0
	for k := range r.fields {
		name, value := r.Field(k)
		hop := isHopByHop(name)
		switch {
		case equalFold(name, "Host"):
			hosts++
			host = value
		case equalFold(name, "Content-Length"):
			cls++
			n, ok := parseContentLength(value)
			if !ok {
				return badRequest("Content-Length is not a non-negative decimal number")
			}
			r.ContentLength = n
		case equalFold(name, "Transfer-Encoding"):
			tes++
			teChunked = equalFold(value, "chunked")
		case equalFold(name, "Expect") && equalFold(value, "100-continue"):
			// RFC 9110 §10.1.1: an HTTP/1.0 request's 100-continue is ignored, and §15.2: a 1.0
			// client is never sent a 1xx (it would read the 100 as its answer); dropped either way.
			r.ExpectContinue = r.Minor == 1
			hop = true
		case equalFold(name, "Upgrade"):
			if upgradeField < 0 && len(value) > 0 {
				upgradeField = k
			}
		case equalFold(name, "Connection"):
			for v := value; len(v) > 0; {
				var tok []byte
				tok, v = nextToken(v)
				switch {
				case equalFold(tok, "close"):
					r.Close = true
				case equalFold(tok, "upgrade"):
					connUpgrade = true
				}
			}
		}
		r.hop = append(r.hop, hop)
	}
	switch {
	case tes > 0 && cls > 0:
		return badRequest("both Transfer-Encoding and Content-Length")
	case tes > 1:
		return badRequest("repeated Transfer-Encoding")
	case tes > 0 && !teChunked:
		return badRequest("Transfer-Encoding other than chunked")
	case tes > 0 && r.Minor == 0:
		return badRequest("Transfer-Encoding in an HTTP/1.0 request")
	case cls > 1:
		return badRequest("repeated Content-Length")
	case r.Minor == 1 && hosts != 1:
		return badRequest("HTTP/1.1 request needs exactly one Host header")
	case hosts > 1:
		return badRequest("repeated Host header")
	case hosts == 1 && !authorityIsHost(r.Target(), host):
		return badRequest("the absolute-form target's authority differs from Host")
	}
	r.hasHost = hosts == 1
	r.Chunked = tes == 1
	markConnectionNamed(r.Head, r.fields, r.hop)
	if upgradeField >= 0 && connUpgrade && r.Minor == 1 && !r.HasBody() && !r.Close {
		r.Upgrade = true
		r.hop[upgradeField] = false
	}
	return nil
}

// absoluteAuthority returns the scheme and the authority (without userinfo) of target when it
// is in absolute-form (scheme "://" authority ...); ok is false for any other form, which has
// no authority.
func absoluteAuthority(target []byte) (scheme, auth []byte, ok bool) {
	sep := bytes.Index(target, []byte("://"))
	if sep <= 0 {
		return nil, nil, false
	}
	for _, c := range target[:sep] { // a scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return nil, nil, false
		}
	}
	auth = target[sep+3:]
	if i := bytes.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	if i := bytes.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	return target[:sep], auth, true
}

// authorityIsHost says whether target, when it is in absolute-form, names host as its
// authority: the same ignoring case and userinfo, a default port (80 for http, 443 for https)
// written or not. Any other form of target passes.
func authorityIsHost(target, host []byte) bool {
	scheme, auth, ok := absoluteAuthority(target)
	if !ok {
		return true
	}
	port := ""
	switch {
	case equalFold(scheme, "http"):
		port = ":80"
	case equalFold(scheme, "https"):
		port = ":443"
	}
	trim := func(b []byte) []byte {
		if port != "" && len(b) > len(port) && string(b[len(b)-len(port):]) == port {
			return b[:len(b)-len(port)]
		}
		return b
	}
	return equalFold(trim(auth), trim(host))
}

// nextToken splits the first comma-separated token (trimmed) off v.
func nextToken(v []byte) (tok, rest []byte) {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		tok, rest = v[:i], v[i+1:]
	} else {
		tok = v
	}
	for len(tok) > 0 && (tok[0] == ' ' || tok[0] == '\t') {
		tok = tok[1:]
	}
	for len(tok) > 0 && (tok[len(tok)-1] == ' ' || tok[len(tok)-1] == '\t') {
		tok = tok[:len(tok)-1]
	}
	return tok, rest
}

// equalFold compares b and s (a string or bytes) ignoring ASCII case, without allocating.
func equalFold[S string | []byte](b []byte, s S) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// AppendCanonical appends the request head as the LB understood it (request line, every header
// line as name: value, empty line). The fuzz test uses it to check that a parsed request
// parses again to the same thing.
func (r *Request) AppendCanonical(dst []byte) []byte {
	dst = append(dst, r.Method()...)
	dst = append(dst, ' ')
	dst = append(dst, r.Target()...)
	dst = append(dst, " HTTP/1."...)
	dst = append(dst, byte('0'+r.Minor))
	dst = append(dst, "\r\n"...)
	for k := range r.fields {
		n, v := r.Field(k)
		dst = append(dst, n...)
		dst = append(dst, ": "...)
		dst = append(dst, v...)
		dst = append(dst, "\r\n"...)
	}
	return append(dst, "\r\n"...)
}
