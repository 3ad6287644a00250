package lb

import (
	"errors"
	"os"
	"time"
)

// clientBody reads the rest of a request body from a client on the goroutine path, under the one
// policy for every body the LB reads, whether it forwards it or drops it: silence bounds it, never
// its duration (client_header_timeout without a byte: attemptClientStall), and a body still
// arriving SlowBodyAfter after its request began holds one of its client IP's
// max_slow_bodies_per_ip slots until it ends (none left: attemptSlowBody).
type clientBody struct {
	s     *Server
	cc    *clientConn
	rest  int64 // bytes still to come
	start time.Time
	rd    deadline
	slow  bool // holds a slow-body slot
}

func (s *Server) newClientBody(cc *clientConn, rest int64, start time.Time) clientBody {
	return clientBody{s: s, cc: cc, rest: rest, start: start, rd: deadline{conn: cc.conn, silence: s.set.budget(phBodyWait)}}
}

// read reads the next part of the body into buf (at most what is left of it) and says why the
// body cannot go on, if it cannot: attemptOK otherwise.
func (b *clientBody) read(buf []byte) (int, attemptError) {
	if aerr := b.admit(); aerr != attemptOK {
		return 0, aerr
	}
	if int64(len(buf)) > b.rest {
		buf = buf[:b.rest]
	}
	n, err := b.cc.conn.Read(buf)
	b.rest -= int64(n)
	if err == nil || b.rest == 0 {
		return n, attemptOK
	}
	return n, readFailed(err)
}

// fill reads more of a chunked body into the connection's read buffer, where its framing
// decides how much of it is body (see http1.ChunkFramer).
func (b *clientBody) fill() attemptError {
	if aerr := b.admit(); aerr != attemptOK {
		return aerr
	}
	if err := b.cc.in.fill(smallBuf); err != nil {
		return readFailed(err)
	}
	return attemptOK
}

// admit applies the slow-body cap and refreshes the silence deadline before a read.
func (b *clientBody) admit() attemptError {
	now := time.Now()
	if !b.slow && now.Sub(b.start) >= SlowBodyAfter {
		if !b.s.slow.acquire(b.cc.ip) {
			return attemptSlowBody
		}
		b.slow = true
	}
	b.rd.touch(now)
	return attemptOK
}

func readFailed(err error) attemptError {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return attemptClientStall
	}
	return attemptClientGone
}

// close gives back the body's slow-body slot, if it took one.
func (b *clientBody) close() {
	if b.slow {
		b.slow = false
		b.s.slow.release(b.cc.ip)
	}
}
