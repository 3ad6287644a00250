package lb

// Windows has no non-blocking MSG_PEEK on a socket Go's poller owns, so:

// alive says no: a request with a body never goes on a pooled connection (a fresh one is as
// safe, only slower), since the pool's probe (see pool) cannot run here.
func (*upstream) alive() bool { return false }

// awaitReadable waits for the next request of an idle client connection by reading into its
// buffer, which it keeps while idle.
func awaitReadable(cc *clientConn, max int) error { return cc.in.fill(max) }
