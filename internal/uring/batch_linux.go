//go:build linux

package uring

import (
	"errors"
	"fmt"

	"github.com/zero502/zero502/internal/rawsys"
	"golang.org/x/sys/unix"
)

// Batch is the receives or sends a loop queues during a round and makes together, in one
// io_uring_enter per ringSize of them, or, where no ring could be set up, one recv(2) or
// send(2) each. Either way each is non-blocking (a send without SIGPIPE) and reports what the
// plain call would: the bytes received or sent (0 received: the end of the stream), or the
// error (unix.EAGAIN when the socket can do nothing now). Operations on one socket in one Flush
// have no order: a loop queues at most one per socket. It belongs to one goroutine.
type Batch struct {
	ring    *Ring // nil: send(2) each
	queued  []queued
	spare   []queued // the other of queued's two arrays: Flush alternates them
	results []result
}

type queued struct {
	recv  bool
	fd    int
	p     []byte
	token uint64
}

type result struct {
	token    uint64
	n        int
	err      error
	reported bool // (by the ring)
}

// ringSize is the most operations one io_uring_enter makes; a batch with more makes more calls.
const ringSize = 256

// NewBatch returns an empty batch, with its own ring unless ring is false or io_uring is not
// allowed here (the error says why; the batch then makes one call at a time).
func NewBatch(ring bool) (*Batch, error) {
	if !ring {
		return &Batch{}, nil
	}
	r, err := New(ringSize)
	return &Batch{ring: r}, err
}

// Ring reports whether the batch sends through io_uring.
func (b *Batch) Ring() bool { return b.ring != nil }

// Len is how many operations are queued.
func (b *Batch) Len() int { return len(b.queued) }

// Send queues a send of p on fd, reported to Flush's done under token. p must stay untouched
// until Flush returns.
func (b *Batch) Send(fd int, p []byte, token uint64) {
	b.queued = append(b.queued, queued{fd: fd, p: p, token: token})
}

// Recv queues a receive into p from fd, reported to Flush's done under token. p must stay
// untouched until Flush returns.
func (b *Batch) Recv(fd int, p []byte, token uint64) {
	b.queued = append(b.queued, queued{recv: true, fd: fd, p: p, token: token})
}

// Flush makes the queued operations, then calls done with each one's token and result, in the
// order they were queued; done may queue more (for the next Flush). If the ring itself fails
// (it should not), the operations the kernel did not take are made one system call each, any it
// took and did not report fail with errRingFailed, and the batch makes one call at a time from
// then on.
func (b *Batch) Flush(done func(token uint64, n int, err error)) {
	all := b.queued
	b.queued = b.spare[:0] // done may queue more: those go to the next Flush
	res := b.results[:0]
	for q := all; len(q) > 0; {
		k := len(q)
		if b.ring == nil {
			for _, s := range q {
				n, err := s.direct()
				res = append(res, result{token: s.token, n: n, err: err})
			}
		} else {
			k = min(k, int(b.ring.size))
			start := len(res)
			for i, s := range q[:k] {
				res = append(res, result{token: s.token})
				if s.recv {
					b.ring.Recv(s.fd, s.p, uint64(i))
				} else {
					b.ring.Send(s.fd, s.p, uint64(i))
				}
			}
			reported := 0
			err := b.ring.Submit(func(i uint64, n int, err error) {
				r := &res[start+int(i)]
				r.n, r.err, r.reported = n, err, true
				reported++
			})
			if err != nil || reported != k {
				if err == nil {
					err = fmt.Errorf("%d of %d operations reported", reported, k)
				}
				for i := start; i < len(res); i++ {
					switch r := &res[i]; {
					case errors.Is(r.err, ErrNotSubmitted):
						r.n, r.err = q[i-start].direct()
					case !r.reported:
						r.err = fmt.Errorf("%w: %v", errRingFailed, err)
					}
				}
				b.ring.Close()
				b.ring = nil
			}
		}
		q = q[k:]
	}
	for _, r := range res {
		done(r.token, r.n, r.err)
	}
	clear(res)
	b.results = res[:0]
	clear(all) // (its buffers are the callers' again)
	b.spare = all[:0]
}

// errRingFailed is the result of an operation a failed ring took and did not report: whether it
// was made is not known, so the socket is in no known state. (Not the ring's own error: an
// unix.EAGAIN from io_uring_enter would read as "the socket can do nothing now".)
var errRingFailed = errors.New("io_uring failed with the operation unreported")

// direct makes s with one system call, non-blocking.
func (s queued) direct() (int, error) {
	call := rawsys.Send
	if s.recv {
		call = rawsys.Recv
	}
	for {
		n, err := call(s.fd, s.p)
		if !errors.Is(err, unix.EINTR) {
			return max(n, 0), err
		}
	}
}

// Close releases the ring.
func (b *Batch) Close() {
	if b.ring != nil {
		b.ring.Close()
		b.ring = nil
	}
}
