// Package rawsys owns the event loops' system calls on their non-blocking sockets (the LB's in
// infra/lb, the edge's in infra/edge), made as raw system calls. None of them can block, so none
// needs the scheduler's bookkeeping around a system call that syscall.Syscall does
// (entersyscall and exitsyscall, about a tenth of a microsecond each way, and a P the runtime's
// monitor may take from a loop in the middle of a call). The LB's loops batch their receives
// and sends through internal/uring, whose fallback (no io_uring) makes them here. The address
// calls skip the extra getsockopt(SO_PROTOCOL) that x/sys/unix makes to decode an address.
// Errors are the bare errno (unix.EAGAIN and friends compare with ==). The only blocking call
// of a loop, epoll_wait with a timeout, stays a scheduler-aware one in internal/evloop, which
// looks with EpollPoll first. Linux only; other systems serve on the goroutine paths and never
// import it.
package rawsys
