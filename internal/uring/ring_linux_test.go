//go:build linux

package uring

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/zero502/zero502/internal/testrig/poll"

	"golang.org/x/sys/unix"
)

// pairs returns k connected loopback TCP pairs as raw non-blocking descriptors.
func pairs(t testing.TB, k int) (senders, receivers []int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for range k {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []net.Conn{c, s} {
			f, err := x.(*net.TCPConn).File()
			if err != nil {
				t.Fatal(err)
			}
			x.Close()
			fd := int(f.Fd())
			dup, _ := unix.Dup(fd)
			f.Close()
			_ = unix.SetNonblock(dup, true)
			if x == c {
				senders = append(senders, dup)
			} else {
				receivers = append(receivers, dup)
			}
		}
	}
	t.Cleanup(func() {
		for _, fd := range append(senders, receivers...) {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	})
	return senders, receivers
}

// modes are the two ways a Batch sends: the ring, and send(2) each where no ring can be set up.
func modes(t *testing.T) map[string]*Batch {
	ring, err := NewBatch(true)
	if err != nil {
		t.Skipf("io_uring is not allowed here (%v): only send(2) each runs", err)
	}
	each, _ := NewBatch(false)
	if !ring.Ring() || each.Ring() {
		t.Fatalf("NewBatch(true).Ring() = %v, NewBatch(false).Ring() = %v", ring.Ring(), each.Ring())
	}
	t.Cleanup(func() { ring.Close(); each.Close() })
	return map[string]*Batch{"ring": ring, "send each": each}
}

type report struct {
	token uint64
	n     int
	err   error
}

func flush(b *Batch) []report {
	var got []report
	b.Flush(func(token uint64, n int, err error) { got = append(got, report{token, n, err}) })
	return got
}

// The results a Batch reports are send(2)'s, in the order of Add, through the ring as without
// it: whole sends, a full socket's EAGAIN and short write, a reset peer's error, a closed
// descriptor's.
func TestBatchReportsWhatSendWould(t *testing.T) {
	for name, b := range modes(t) {
		t.Run(name, func(t *testing.T) {
			s, r := pairs(t, 3)
			msgs := [][]byte{[]byte("GET / HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\n"), []byte("x")}
			for i, fd := range s {
				b.Send(fd, msgs[i], uint64(100+i))
			}
			if b.Len() != 3 {
				t.Fatalf("Len() = %d after three Adds, want 3", b.Len())
			}
			got := flush(b)
			if len(got) != 3 || b.Len() != 0 {
				t.Fatalf("Flush reported %v and left %d queued, want three reports and none", got, b.Len())
			}
			for i, g := range got {
				if g.token != uint64(100+i) || g.n != len(msgs[i]) || g.err != nil {
					t.Errorf("report %d = %+v, want token %d, %d bytes, no error", i, g, 100+i, len(msgs[i]))
				}
				buf := make([]byte, 64)
				n, _ := unix.Read(r[i], buf)
				if string(buf[:n]) != string(msgs[i]) {
					t.Errorf("peer %d read %q, want %q", i, buf[:n], msgs[i])
				}
			}

			// a full socket: its send takes part of the bytes, the next none (EAGAIN)
			_ = unix.SetsockoptInt(s[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
			big := make([]byte, 4<<20)
			b.Send(s[0], big, 1)
			first := flush(b)
			if first[0].err != nil || first[0].n <= 0 || first[0].n >= len(big) {
				t.Errorf("a send of 4 MiB into a small socket buffer reported %+v, want a short write", first[0])
			}
			var last report
			for range 100 { // the peer's receive buffer takes some more; then nothing goes
				b.Send(s[0], big, 2)
				if last = flush(b)[0]; last.err != nil {
					break
				}
			}
			if last.err != unix.EAGAIN || last.n != 0 {
				t.Errorf("sends into a full socket ended with %+v, want EAGAIN and 0 bytes", last)
			}

			// a peer that reset the connection, and a descriptor that is closed
			_ = unix.SetsockoptLinger(r[1], unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
			_ = unix.Close(r[1])
			r[1] = -1
			poll.Until(t, 5*time.Second, "the reset reaches the sender", func() bool {
				_, err := peek(s[1])
				return err != unix.EAGAIN
			})
			closed, _ := unix.Dup(s[2])
			_ = unix.Close(closed)
			b.Send(s[1], msgs[0], 7)
			b.Send(closed, msgs[0], 8)
			got = flush(b)
			if got[0].token != 7 || got[0].err == nil || got[0].n != 0 {
				t.Errorf("a send to a reset peer reported %+v, want token 7 and an error", got[0])
			}
			if got[1].token != 8 || got[1].err != unix.EBADF {
				t.Errorf("a send on a closed descriptor reported %+v, want token 8 and EBADF", got[1])
			}
		})
	}
}

// Receives report what recv(2) would, mixed with sends in one Flush: the bytes there, EAGAIN
// on an empty socket, 0 at the end of the stream.
func TestBatchReceivesAsRecvWould(t *testing.T) {
	for name, b := range modes(t) {
		t.Run(name, func(t *testing.T) {
			s, r := pairs(t, 3)
			const head = "HTTP/1.1 204 No Content\r\n\r\n"
			if _, err := unix.Write(s[0], []byte(head)); err != nil {
				t.Fatal(err)
			}
			_ = unix.Close(s[2])
			s[2] = -1
			poll.Until(t, 5*time.Second, "the bytes and the end of the stream arrive", func() bool {
				n, _ := peek(r[0])
				m, err := peek(r[2])
				return n == len(head) && m == 0 && err == nil
			})
			bufs := [3][]byte{make([]byte, 64), make([]byte, 64), make([]byte, 64)}
			for i, fd := range r {
				b.Recv(fd, bufs[i], uint64(i))
			}
			b.Send(s[1], []byte("ping"), 3)
			got := flush(b)
			want := []report{{0, len(head), nil}, {1, 0, unix.EAGAIN}, {2, 0, nil}, {3, 4, nil}}
			if len(got) != len(want) {
				t.Fatalf("Flush reported %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("report %d = %+v, want %+v", i, got[i], want[i])
				}
			}
			if string(bufs[0][:len(head)]) != head {
				t.Errorf("the receive read %q, want %q", bufs[0][:len(head)], head)
			}
		})
	}
}

// A Flush of more sends than one io_uring_enter makes reports each of them, in order; the sends
// that done queues go to the next Flush.
func TestBatchFlushesMoreThanARingAndQueuesWhatDoneAdds(t *testing.T) {
	for name, b := range modes(t) {
		t.Run(name, func(t *testing.T) {
			s, r := pairs(t, ringSize+ringSize/2)
			for i, fd := range s {
				b.Send(fd, []byte{byte(i)}, uint64(i))
			}
			next := 0
			b.Flush(func(token uint64, n int, err error) {
				if token != uint64(next) || n != 1 || err != nil {
					t.Fatalf("report %d: token %d, %d bytes, %v; want token %d, 1 byte, no error", next, token, n, err, next)
				}
				next++
				if token == 0 {
					b.Send(s[0], []byte{0xee}, 9999)
				}
			})
			if next != len(s) || b.Len() != 1 {
				t.Fatalf("Flush reported %d of %d sends and left %d queued; want all, and the one done added", next, len(s), b.Len())
			}
			for i, fd := range r {
				var p [2]byte
				if n, _ := unix.Read(fd, p[:]); n != 1 || p[0] != byte(i) {
					t.Fatalf("peer %d read %v, want [%d]", i, p[:n], byte(i))
				}
			}
			got := flush(b)
			if len(got) != 1 || got[0].token != 9999 || got[0].n != 1 {
				t.Fatalf("the next Flush reported %+v, want the send done added", got)
			}
		})
	}
}

// peek is recv(2) with MSG_PEEK: what a read would find, left there.
func peek(fd int) (int, error) {
	var p [64]byte
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// newRing is a ring of 8 entries, closed when the test ends; the test is skipped where io_uring
// is not allowed.
func newRing(t *testing.T) *Ring {
	ring, err := New(8)
	if err != nil {
		t.Skipf("io_uring is not allowed here: %v", err)
	}
	t.Cleanup(ring.Close)
	return ring
}

// arrive writes msg on the sender s and waits until all of it can be read at the receiver r.
func arrive(t *testing.T, s, r int, msg string) {
	t.Helper()
	if n, err := unix.Write(s, []byte(msg)); n != len(msg) || err != nil {
		t.Fatal(n, err)
	}
	poll.Until(t, 5*time.Second, "the bytes reach the receiver", func() bool { n, _ := peek(r); return n == len(msg) })
}

func drain(t testing.TB, fds []int, want int) {
	buf := make([]byte, 4096)
	for _, fd := range fds {
		got := 0
		for got < want {
			n, err := unix.Read(fd, buf)
			if err == unix.EAGAIN {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
}

func BenchmarkSends(b *testing.B) {
	const k = 8
	msg := make([]byte, 200)
	b.Run("send(2) each", func(b *testing.B) {
		s, r := pairs(b, k)
		for b.Loop() {
			for _, fd := range s {
				if n, err := unix.SendmsgN(fd, msg, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL); err != nil || n != len(msg) {
					b.Fatal(n, err)
				}
			}
			drain(b, r, len(msg))
		}
	})
	b.Run("one ring submit", func(b *testing.B) {
		s, r := pairs(b, k)
		ring, err := New(64)
		if err != nil {
			b.Fatal(err)
		}
		defer ring.Close()
		for b.Loop() {
			for i, fd := range s {
				ring.Send(fd, msg, uint64(i))
			}
			if err := ring.Submit(func(_ uint64, n int, err error) {
				if err != nil || n != len(msg) {
					b.Fatal(n, err)
				}
			}); err != nil {
				b.Fatal(err)
			}
			drain(b, r, len(msg))
		}
	})
}

// A ring that fails (here: its descriptor closed under it) took none of the operations of the
// io_uring_enter that failed: the batch makes them one system call each, with the results the
// plain calls give, and goes on without the ring.
func TestABatchWhoseRingFailsMakesItsOperationsWithoutIt(t *testing.T) {
	b, err := NewBatch(true)
	if err != nil {
		t.Skipf("io_uring is not allowed here: %v", err)
	}
	defer b.Close()
	s, r := pairs(t, 3)
	arrive(t, s[1], r[1], "waiting")
	_ = unix.Close(b.ring.fd)
	b.ring.fd = -1
	buf := make([]byte, 16)
	b.Send(s[0], []byte("made"), 1)
	b.Recv(r[1], buf, 2)
	b.Recv(r[2], make([]byte, 16), 3) // nothing to receive: EAGAIN, as recv(2) says
	got := flush(b)
	want := []report{{1, 4, nil}, {2, 7, nil}, {3, 0, unix.EAGAIN}}
	if len(got) != len(want) {
		t.Fatalf("a flush through a broken ring reported %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("a flush through a broken ring reported %+v, want %+v", got, want)
		}
	}
	if string(buf[:7]) != "waiting" {
		t.Fatalf("received %q, want %q", buf[:7], "waiting")
	}
	drain(t, r[:1], 4)
	if b.Ring() {
		t.Fatal("the batch still uses the ring that failed")
	}
	b.Send(s[0], []byte("sent"), 4)
	if got := flush(b); len(got) != 1 || got[0] != (report{4, 4, nil}) {
		t.Fatalf("the next send reported %+v, want token 4 and 4 bytes", got)
	}
	drain(t, r[:1], 4)
}

// A Submit whose io_uring_enter fails reports each operation the kernel did not take as
// ErrNotSubmitted, withdraws them, and returns the system call's error.
func TestRingSubmitThatFailsReportsWhatItDidNotMake(t *testing.T) {
	ring := newRing(t)
	s, _ := pairs(t, 1)
	fd := ring.fd
	ring.fd = -1 // io_uring_enter(-1): EBADF, and the kernel takes nothing
	ring.Send(s[0], []byte("a"), 7)
	ring.Send(s[0], []byte("b"), 8)
	var got []report
	err := ring.Submit(func(token uint64, n int, err error) { got = append(got, report{token, n, err}) })
	ring.fd = fd
	if !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "io_uring_enter") {
		t.Fatalf("Submit returned %v, want io_uring_enter's EBADF", err)
	}
	if len(got) != 2 || got[0] != (report{7, 0, ErrNotSubmitted}) || got[1] != (report{8, 0, ErrNotSubmitted}) {
		t.Fatalf("Submit reported %+v, want tokens 7 and 8 not submitted", got)
	}
	// withdrawn: the ring works on, without them
	ring.Send(s[0], []byte("c"), 9)
	got = nil
	if err := ring.Submit(func(token uint64, n int, err error) { got = append(got, report{token, n, err}) }); err != nil || len(got) != 1 || got[0] != (report{9, 1, nil}) {
		t.Fatalf("the next Submit: %v, reported %+v, want token 9 and 1 byte", err, got)
	}
}

// A buffer handed to the ring stays where the kernel was told it is, even when the goroutine's
// stack grows (and is copied elsewhere) between the queueing and Submit: a receive into an
// array of the caller's finds the bytes in that array.
func TestRingKeepsItsBuffersInPlace(t *testing.T) {
	ring := newRing(t)
	s, r := pairs(t, 1)
	arrive(t, s[0], r[0], "hello")
	got := make(chan string)
	go func() { got <- receiveAcrossStackGrowth(t, ring, r[0]) }() // a new goroutine: a small stack
	if g := <-got; g != "hello" {
		t.Fatalf("the receive's buffer holds %q, want %q", g, "hello")
	}
}

//go:noinline
func receiveAcrossStackGrowth(t *testing.T, ring *Ring, fd int) string {
	var buf [64]byte
	ring.Recv(fd, buf[:], 1)
	growStack(256)
	n := 0
	if err := ring.Submit(func(_ uint64, m int, err error) {
		if err != nil {
			t.Errorf("the receive reported %v", err)
		}
		n = m
	}); err != nil {
		t.Error(err)
	}
	return string(buf[:n])
}

// growStack recurses depth frames of 1 KiB each, so that the goroutine's stack is copied.
//
//go:noinline
func growStack(depth int) byte {
	var frame [1024]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return growStack(depth-1) + frame[depth%len(frame)]
}
