package http1

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ParseError is a request the LB refuses; Status is the answer it gets (400, 431 or 501). The
// connection is always closed after a ParseError: after a framing error the LB can no longer
// tell where the next request would start (RFC 9112 §6.3).
type ParseError struct {
	Status int
	Reason string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Reason) }

func badRequest(reason string) error { return &ParseError{Status: 400, Reason: reason} }

// errIncomplete says the head has no terminating empty line yet: read more.
var errIncomplete = errors.New("request head incomplete")

// span is a byte range [off, end) inside a message head.
type span struct{ off, end int }

func (s span) of(b []byte) []byte { return b[s.off:s.end] }

// field is one header line: name and value (value with surrounding whitespace trimmed).
type field struct{ name, value span }

// tchar reports whether c may appear in a token (RFC 9110 §5.6.2).
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// HeadEnd returns the length of the head in b (through the empty line), or -1 when b does not
// hold a whole head yet. A bare LF anywhere in the head is an error (RFC 9112 §2.2 allows
// recipients to accept it; a proxy that does so disagrees with strict backends, which is how
// requests are smuggled).
func HeadEnd(b []byte) (int, error) {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1, nil
		}
		j += i
		if j == 0 || b[j-1] != '\r' {
			return -1, badRequest("bare LF line ending")
		}
		if j >= 3 && b[j-2] == '\n' && b[j-3] == '\r' {
			return j + 1, nil
		}
		i = j + 1
	}
}

// CheckPartialRequestLine refuses early what can never become a request line, so garbage gets
// its 400 without waiting for a header timeout or the size limit.
func CheckPartialRequestLine(b []byte) error {
	for i, c := range b {
		switch {
		case c == ' ':
			if i == 0 {
				return badRequest("request line starts with a space")
			}
			return nil
		case c == '\r' || c == '\n':
			if i == 0 {
				continue
			}
			return badRequest("request line without a target")
		case !tchar[c]:
			return badRequest("method is not a token")
		}
	}
	return nil
}

// SkipEmptyLines returns how many leading CRLFs to ignore before a request line (RFC 9112 §2.2).
func SkipEmptyLines(b []byte) int {
	n := 0
	for len(b) >= n+2 && b[n] == '\r' && b[n+1] == '\n' {
		n += 2
	}
	return n
}

// parseFields parses header lines from b starting at i up to the empty line; it appends to
// fields and returns them. Refused: obs-fold, whitespace before the colon, an empty or non-token
// name, control characters in a value; with max > 0, more than max lines (431).
func parseFields(b []byte, i int, fields []field, max int) ([]field, error) {
	for n := 0; ; n++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return fields, errIncomplete
		}
		j += i
		if j == i || b[j-1] != '\r' {
			return fields, badRequest("bare LF line ending")
		}
		line := b[i : j-1]
		if len(line) == 0 {
			return fields, nil
		}
		if max > 0 && n == max {
			return fields, &ParseError{Status: 431, Reason: "more than " + strconv.Itoa(max) + " header fields"}
		}
		if line[0] == ' ' || line[0] == '\t' {
			return fields, badRequest("obsolete line folding")
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return fields, badRequest("header line without a colon")
		}
		if colon == 0 {
			return fields, badRequest("empty header name")
		}
		for _, c := range line[:colon] {
			if c == ' ' || c == '\t' {
				return fields, badRequest("whitespace before the colon")
			}
			if !tchar[c] {
				return fields, badRequest("header name is not a token")
			}
		}
		vs, ve := i+colon+1, j-1
		for vs < ve && (b[vs] == ' ' || b[vs] == '\t') {
			vs++
		}
		for ve > vs && (b[ve-1] == ' ' || b[ve-1] == '\t') {
			ve--
		}
		for _, c := range b[vs:ve] {
			if (c < 0x20 && c != '\t') || c == 0x7f {
				return fields, badRequest("control character in a header value")
			}
		}
		fields = append(fields, field{name: span{i, i + colon}, value: span{vs, ve}})
		i = j + 1
	}
}

// parseContentLength parses a Content-Length value strictly: digits only, no sign, no list.
func parseContentLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
