package lb

import (
	"net"
	"sync"
)

// reader is a read buffer over one connection that can hand back its memory while the
// connection is idle: a keep-alive client between requests holds no buffer at all, which is
// what keeps an idle connection near the goroutine's own few KiB.
type reader struct {
	conn net.Conn
	buf  []byte
	pbuf *[]byte // the pooled buffer buf came from, nil when buf is not pooled
	r, w int
}

const smallBuf = 4 << 10

var smallBufs = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}

// buffered is what has been read and not consumed.
func (b *reader) buffered() []byte { return b.buf[b.r:b.w] }

// consume marks n buffered bytes as used.
func (b *reader) consume(n int) {
	b.r += n
	if b.r == b.w {
		b.r, b.w = 0, 0
	}
}

// preload puts p in the empty reader, as if it had been read from the connection.
func (b *reader) preload(p []byte) {
	b.acquire()
	if len(p) > len(b.buf) {
		b.putBack()
		b.buf = make([]byte, len(p))
	}
	b.r, b.w = 0, copy(b.buf, p)
}

// acquire makes sure the reader has a buffer.
func (b *reader) acquire() {
	if b.buf == nil {
		b.pbuf = smallBufs.Get().(*[]byte)
		b.buf = *b.pbuf
	}
}

// release returns the buffer to the pool when nothing is buffered.
func (b *reader) release() {
	if b.buf == nil || b.r != b.w {
		return
	}
	b.putBack()
	b.buf, b.r, b.w = nil, 0, 0
}

// fill reads once more from the connection, compacting and growing the buffer (up to max bytes
// buffered) as needed. It returns errBufferFull when max bytes are buffered already.
func (b *reader) fill(max int) error {
	free, err := b.space(max)
	if err != nil {
		return err
	}
	n, err := b.conn.Read(free)
	b.w += n
	if n > 0 {
		return nil
	}
	return err
}

// space returns the free end of the buffer for the next read (the caller adds what it read to
// w), compacting and growing the buffer (up to max bytes buffered) as needed; errBufferFull
// when max bytes are buffered already.
func (b *reader) space(max int) ([]byte, error) {
	b.acquire()
	if b.r > 0 && b.w == len(b.buf) {
		copy(b.buf, b.buf[b.r:b.w])
		b.w -= b.r
		b.r = 0
	}
	if b.w == len(b.buf) {
		if b.w-b.r >= max {
			return nil, errBufferFull
		}
		n := 2 * len(b.buf)
		if n > max+b.r {
			n = max + b.r
		}
		nb := make([]byte, n)
		copy(nb, b.buf[:b.w])
		b.putBack()
		b.buf = nb
	}
	return b.buf[b.w:], nil
}

func (b *reader) putBack() {
	if b.pbuf != nil {
		smallBufs.Put(b.pbuf)
		b.pbuf = nil
	}
}

type bufferFullError struct{}

func (bufferFullError) Error() string { return "buffer full" }

var errBufferFull error = bufferFullError{}
