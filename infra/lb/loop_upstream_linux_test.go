package lb

import (
	"fmt"
	"testing"
)

// A final head buffered behind an interim head the client has not taken yet waits for it:
// readHead looks at no head while the client has bytes pending (clientSent reads on once they
// went). Before, it went on to the final head, and a close-delimited one took the connection to
// the goroutine path without the rest of the interim head. (End to end, on real sockets:
// TestInterimHeadsTheClientHasNotTakenGoBeforeTheFinalHead, where the timing decides whether
// it happens.)
func TestReadHeadWaitsForAnInterimHeadTheClientHasNotTaken(t *testing.T) {
	const final = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody"
	u := &lup{in: reader{buf: []byte(final), w: len(final)}}
	u.CanRead = true
	x := &exchange{}
	x.req.Minor = 1
	interim := []byte("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n")
	c := &lclient{x: x, u: u, phase: phAwait, pend: interim, pendOff: 10}
	u.c = c
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("readHead went on to the final head: %v", p)
			}
		}()
		(&loop{}).readHead(c, u)
		return nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	if string(u.in.buffered()) != final || c.u != u || c.phase != phAwait || c.pendOff != 10 || len(c.pend) != len(interim) {
		t.Fatalf("readHead, with %d bytes of an interim head pending: buffered %q, phase %v, pending %d of %d; want all left as it was",
			len(interim)-10, u.in.buffered(), c.phase, c.pendOff, len(c.pend))
	}
}
