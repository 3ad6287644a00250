//go:build linux

package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's interface (include/uapi/linux/io_uring.h).
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqe struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off, addr     uint64
	len, opFlags  uint32
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFDIn    int32
	addr3, pad    uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

const (
	opSend         = 26
	opRecv         = 27
	featSingleMmap = 1 << 0
	setupSubmitAll = 1 << 7 // an operation that fails at once does not stop the ones after it (Linux 5.18)
	enterGetEvents = 1 << 0
	offSQRing      = 0
	offCQRing      = 0x8000000
	offSQEs        = 0x10000000
	sizeofSQE      = 64
	sizeofCQE      = 16
	sendFlags      = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL
	recvFlags      = unix.MSG_DONTWAIT
)

// Ring is one io_uring with its queues mapped. It belongs to one goroutine.
type Ring struct {
	fd             int
	rings, sqeMem  []byte
	sqTail, sqMask *uint32
	sqHead         *uint32
	sqes           []sqe
	cqHead, cqTail *uint32
	cqMask         *uint32
	cqes           []cqe
	queued         uint32   // SQEs written since the last Submit
	held           [][]byte // their buffers, referenced until Submit returns (so on the heap)
	size           uint32
}

// ErrNotSubmitted is the result Submit reports for an operation the kernel did not take, because
// io_uring_enter failed: the operation was not made, and may be made another way.
var ErrNotSubmitted = errors.New("io_uring: not submitted")

// New sets up a ring for up to entries operations per Submit (rounded up to a power of two by the
// kernel).
func New(entries uint32) (*Ring, error) {
	p := params{flags: setupSubmitAll}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), size: p.sqEntries, held: make([][]byte, 0, p.sqEntries)}
	if p.features&featSingleMmap == 0 {
		r.Close()
		return nil, errors.New("io_uring_setup: the kernel lacks IORING_FEAT_SINGLE_MMAP (Linux 5.4)")
	}
	ringSize := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*sizeofCQE)
	var err error
	r.rings, err = unix.Mmap(r.fd, offSQRing, int(ringSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("mmap io_uring rings: %w", err)
	}
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries*sizeofSQE), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("mmap io_uring submission entries: %w", err)
	}
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&r.rings[off])) }
	r.sqHead, r.sqTail, r.sqMask = at(p.sqOff.head), at(p.sqOff.tail), at(p.sqOff.ringMask)
	r.cqHead, r.cqTail, r.cqMask = at(p.cqOff.head), at(p.cqOff.tail), at(p.cqOff.ringMask)
	array := unsafe.Slice(at(p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // slot i is SQE i, for good
	}
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&r.rings[p.cqOff.cqes])), p.cqEntries)
	return r, nil
}

// Full reports whether the next operation must wait for a Submit.
func (r *Ring) Full() bool { return r.queued == r.size }

// Send queues a send of p on fd (non-blocking, no SIGPIPE) whose result Submit reports under
// token. p must stay untouched until Submit returns. It panics when the ring is Full.
func (r *Ring) Send(fd int, p []byte, token uint64) { r.queue(opSend, sendFlags, fd, p, token) }

// Recv queues a receive into p from fd (non-blocking) whose result Submit reports under token.
// p must stay untouched until Submit returns. It panics when the ring is Full.
func (r *Ring) Recv(fd int, p []byte, token uint64) { r.queue(opRecv, recvFlags, fd, p, token) }

func (r *Ring) queue(op uint8, flags uint32, fd int, p []byte, token uint64) {
	if r.Full() {
		panic("uring: a full ring")
	}
	tail := *r.sqTail + r.queued
	e := &r.sqes[tail&*r.sqMask]
	*e = sqe{opcode: op, fd: int32(fd), len: uint32(len(p)), opFlags: flags, userData: token}
	if len(p) > 0 {
		e.addr = uint64(uintptr(unsafe.Pointer(&p[0])))
	}
	// The kernel has p's address only: held keeps p referenced, hence on the heap, where it
	// does not move (a buffer on a goroutine's stack would move when the stack grows).
	r.held = append(r.held, p)
	r.queued++
}

// Submit hands the queued operations to the kernel in one system call, waits until all of them
// are done (none waits: they are non-blocking), and calls done with each one's token and
// result: the bytes sent or received (0 received: the end of the stream), or the error
// (unix.EAGAIN when the socket can do nothing now). When io_uring_enter fails, Submit reports
// what had completed, reports ErrNotSubmitted for each operation the kernel did not take
// (withdrawn from the ring), and returns the error; an operation taken and not completed by then
// goes unreported.
func (r *Ring) Submit(done func(token uint64, n int, err error)) error {
	n := r.queued
	if n == 0 {
		return nil
	}
	defer func() {
		clear(r.held)
		r.held = r.held[:0]
	}()
	atomic.StoreUint32(r.sqTail, *r.sqTail+n)
	r.queued = 0
	for seen := uint32(0); seen < n; {
		// what the kernel has not taken yet (none but after an interrupted call), and the
		// completions still to come (none: the operations complete as they are submitted)
		toSubmit := atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead)
		_, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(n-seen), enterGetEvents, 0, 0)
		seen += r.reap(done)
		switch errno {
		case 0, syscall.EINTR:
			continue
		}
		// A failed io_uring_enter took none of the entries it was given (io_uring_enter(2)).
		for k := atomic.LoadUint32(r.sqHead); k != *r.sqTail; k++ {
			done(r.sqes[k&*r.sqMask].userData, 0, ErrNotSubmitted)
		}
		atomic.StoreUint32(r.sqTail, atomic.LoadUint32(r.sqHead))
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
	return nil
}

// reap reports the completions the kernel has posted and returns how many.
func (r *Ring) reap(done func(token uint64, n int, err error)) uint32 {
	head, k := *r.cqHead, uint32(0)
	for tail := atomic.LoadUint32(r.cqTail); head != tail; head++ {
		c := &r.cqes[head&*r.cqMask]
		if c.res < 0 {
			done(c.userData, 0, syscall.Errno(-c.res))
		} else {
			done(c.userData, int(c.res), nil)
		}
		k++
	}
	atomic.StoreUint32(r.cqHead, head)
	return k
}

// Close unmaps the ring and closes it.
func (r *Ring) Close() {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
		r.sqeMem = nil
	}
	if r.rings != nil {
		_ = unix.Munmap(r.rings)
		r.rings = nil
	}
	if r.fd >= 0 {
		_ = unix.Close(r.fd)
		r.fd = -1
	}
}
