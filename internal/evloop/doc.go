// Package evloop owns the skeleton of the event loops that forward connections without a
// goroutine per connection, on Linux: the in-house LB's (infra/lb) and the edge forwarder's
// (infra/edge). A Loop is one epoll set, one wake-up descriptor (an eventfd that Poke writes) and,
// when it accepts, its own duplicate of the listening socket, registered with EPOLLEXCLUSIVE so
// that the kernel wakes one loop per new connection, not all of them. Loop.Run is the cycle every
// loop runs: epoll_wait (a non-blocking look first, as a raw system call), batches of accepts,
// a pass through the Go scheduler every few milliseconds, the periodic sweep, and the end when
// its context does. A Group is the loops of one listener, one per P by default, started and
// waited for together.
//
// What a loop does with its connections is its consumer's: the LB's exchanges and the edge's
// relays, their state machines and policies, stay in their packages and receive the loop's
// news through a Handler (accepted connections, readiness of the descriptors they registered
// with a token, wake-ups, sweeps). The loop allocates nothing per event and makes no system
// call beyond the ones its cycle needs; its system calls are internal/rawsys's.
//
// Linux only: other systems have no event loops, and their consumers serve on their goroutine
// paths without importing it.
package evloop
