package lb

import (
	"strconv"

	"github.com/zero502/zero502/infra/http1"
)

// requestHead finds the client's next request head at the start of buf, after the empty lines
// a client may send between requests (RFC 9112 §2.2), for both paths: skip is how many bytes of
// those to drop, n the head's length or -1 when more must be read first, err the
// *http1.ParseError to answer (400 for a malformed head, 431 past max bytes).
func requestHead(buf []byte, max int) (skip, n int, err error) {
	skip = http1.SkipEmptyLines(buf)
	buf = buf[skip:]
	n, err = http1.HeadEnd(buf)
	switch {
	case err != nil:
		return skip, 0, err
	case n > max || n < 0 && len(buf) >= max:
		return skip, 0, headTooLarge(max)
	case n < 0:
		return skip, -1, http1.CheckPartialRequestLine(buf)
	}
	return skip, n, nil
}

// headTooLarge is the 431 for a request head past max bytes.
func headTooLarge(max int) error {
	return &http1.ParseError{Status: 431, Reason: "request header block larger than " + strconv.Itoa(max) + " bytes"}
}

// headStep is what the buffered bytes of a backend's answer hold, for both paths' head reading.
type headStep int

const (
	headMore    headStep = iota // no whole head yet: read more
	headInterim                 // an interim response (100 Continue, 103 Early Hints): pass it on, read on
	headFinal                   // the final response head (or 101 to a request that asked to upgrade)
	headBad                     // a malformed head, or switching protocols nobody asked for
)

// responseHead parses the next response head of buf (the answer to req) into resp and says
// what it is and how many bytes of buf it takes.
func responseHead(buf []byte, req *http1.Request, resp *http1.Response) (int, headStep) {
	n, err := http1.HeadEnd(buf)
	switch {
	case err != nil:
		return 0, headBad
	case n < 0:
		return 0, headMore
	}
	if err := http1.ParseResponse(buf[:n], req.IsHead(), resp); err != nil {
		return 0, headBad
	}
	switch {
	case resp.Status == 101 && !req.Upgrade:
		return 0, headBad
	case resp.Status == 101:
		return n, headFinal
	case resp.Status >= 100 && resp.Status < 200:
		return n, headInterim
	}
	return n, headFinal
}
