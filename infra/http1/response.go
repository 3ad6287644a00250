package http1

import (
	"bytes"
	"errors"
)

// Framing is how a response body ends.
type Framing int

// Response framings (RFC 9112 §6.3).
const (
	NoBody        Framing = iota // HEAD, 1xx, 204, 304
	ContentLength                // exactly ContentLength bytes
	Chunked                      // chunked coding, relayed as is, parsed to find its end
	UntilClose                   // the body ends when the backend closes the connection
)

// Response is a parsed backend response head; spans point into Head.
type Response struct {
	Head          []byte
	Status        int
	Minor         int
	Framing       Framing
	ContentLength int64
	// KeepAlive is true when the backend allows reusing the connection afterwards.
	KeepAlive bool

	reason span
	fields []field
	hop    []bool
}

var errBadResponse = errors.New("malformed response from backend")

// ParseResponse parses a whole response head into r; reqHead says the request was HEAD.
func ParseResponse(head []byte, reqHead bool, r *Response) error {
	r.Head = head
	r.fields, r.hop = r.fields[:0], r.hop[:0]
	eol := bytes.IndexByte(head, '\n')
	if eol < 13 || head[eol-1] != '\r' {
		return errBadResponse
	}
	line := head[:eol-1]
	if string(line[:7]) != "HTTP/1." || (line[7] != '0' && line[7] != '1') || line[8] != ' ' {
		return errBadResponse
	}
	r.Minor = int(line[7] - '0')
	st := line[9:12]
	if st[0] < '1' || st[0] > '5' || st[1] < '0' || st[1] > '9' || st[2] < '0' || st[2] > '9' {
		return errBadResponse
	}
	r.Status = int(st[0]-'0')*100 + int(st[1]-'0')*10 + int(st[2]-'0')
	if len(line) > 12 && line[12] != ' ' {
		return errBadResponse
	}
	r.reason = span{min(13, len(line)), len(line)}
	for _, c := range r.reason.of(head) {
		// RFC 9112 §4: HTAB, SP, VCHAR, obs-text; a bare CR or a NUL passed on to the client
		// would let a backend write lines of its own into the head the LB sends
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return errBadResponse
		}
	}
	var err error
	r.fields, err = parseFields(head, eol+1, r.fields, 0)
	if err != nil {
		return errBadResponse
	}
	r.KeepAlive = r.Minor == 1
	var cls, tes, chunked int
	chunkedLast := false
	r.ContentLength = -1
	for k, f := range r.fields {
		name, value := f.name.of(head), f.value.of(head)
		r.hop = append(r.hop, isHopByHop(name) && !equalFold(name, "Transfer-Encoding"))
		switch {
		case equalFold(name, "Content-Length"):
			n, ok := parseContentLength(value)
			if !ok || (cls > 0 && n != r.ContentLength) {
				return errBadResponse
			}
			cls++
			r.ContentLength = n
		case equalFold(name, "Transfer-Encoding"):
			tes++
			chunkedLast = false
			for v := value; len(v) > 0; {
				var tok []byte
				tok, v = nextToken(v)
				chunkedLast = equalFold(tok, "chunked")
				if chunkedLast {
					chunked++
				}
			}
		case equalFold(name, "Connection"):
			for v := value; len(v) > 0; {
				var tok []byte
				tok, v = nextToken(v)
				switch {
				case equalFold(tok, "close"):
					r.KeepAlive = false
				case equalFold(tok, "keep-alive") && r.Minor == 0:
					r.KeepAlive = true
				}
			}
		}
		_ = k
	}
	if chunked > 1 {
		// RFC 9112 §6.1: chunked is applied once; relayed as it came, the client would decode
		// it twice or frame the body otherwise than the LB
		return errBadResponse
	}
	markConnectionNamed(head, r.fields, r.hop)
	switch {
	case reqHead || r.Status < 200 || r.Status == 204 || r.Status == 304:
		r.Framing = NoBody
	case tes > 0 && chunkedLast:
		r.Framing = Chunked
	case tes > 0:
		r.Framing = UntilClose
	case cls > 0:
		r.Framing = ContentLength
	default:
		r.Framing = UntilClose
	}
	if tes > 0 && cls > 0 {
		// RFC 9112 §6.3: Transfer-Encoding overrides; the connection must not be reused, and
		// an intermediary removes Content-Length before forwarding the message
		r.KeepAlive = false
		for k, f := range r.fields {
			if equalFold(f.name.of(head), "Content-Length") {
				r.hop[k] = true
			}
		}
	}
	if r.Framing == UntilClose || tes > 0 && r.Minor == 0 {
		// RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing; the
		// connection is closed after it, whatever its Connection header says
		r.KeepAlive = false
	}
	return nil
}

// Get returns the first value of the header named name (case-insensitive).
func (r *Response) Get(name string) ([]byte, bool) {
	for _, f := range r.fields {
		if equalFold(f.name.of(r.Head), name) {
			return f.value.of(r.Head), true
		}
	}
	return nil, false
}

// AppendClientHead appends the head the LB sends to its client: the backend's status line as
// HTTP/1.1, the end-to-end headers byte for byte (Content-Length is dropped when
// Transfer-Encoding came with it, RFC 9112 §6.3; Transfer-Encoding stays: the chunked framing
// is relayed as it came, except to an HTTP/1.0 client, which gets the body decoded and
// close-delimited, without the trailer section: dechunk, which drops Transfer-Encoding and
// Trailer, RFC 9112 §7.1.3), and Connection: close when the LB will close the client connection.
func AppendClientHead(dst []byte, r *Response, closeClient, dechunk bool) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = append(dst, r.Head[9:12]...)
	dst = append(dst, ' ')
	dst = append(dst, r.reason.of(r.Head)...)
	dst = append(dst, "\r\n"...)
	for k, f := range r.fields {
		if r.hop[k] || dechunk && (equalFold(f.name.of(r.Head), "Transfer-Encoding") || equalFold(f.name.of(r.Head), "Trailer")) {
			continue
		}
		dst = append(dst, f.name.of(r.Head)...)
		dst = append(dst, ": "...)
		dst = append(dst, f.value.of(r.Head)...)
		dst = append(dst, "\r\n"...)
	}
	if closeClient {
		dst = append(dst, "Connection: close\r\n"...)
	}
	return append(dst, "\r\n"...)
}
