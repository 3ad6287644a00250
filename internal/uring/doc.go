// Package uring owns the event loops' batched socket I/O: one io_uring (io_uring(7)) per loop,
// through which a loop hands the kernel the receives of one round's readable sockets, and then
// the sends that come of them, each set in a single system call instead of one recv(2) or
// send(2) each. On this kind of machine a system call's entry and exit alone cost about 2.5 µs
// (a virtual machine's trap), as much as the work of a small send; a busy loop makes several
// per round. Every operation carries MSG_DONTWAIT so that none waits in the kernel: one the
// socket cannot serve now completes at once with EAGAIN, as the plain call would, and the
// loop's epoll set says when to go on. Where io_uring is not allowed (an older kernel, a seccomp
// profile, io_uring_disabled), a Batch makes the same calls one at a time, with the same
// results.
//
// Linux only: other systems have no event loops.
package uring
