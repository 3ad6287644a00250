// Package fdlimit lowers a test process's descriptor limit so that the next socket, accept or
// open fails with EMFILE: how the tests of a server prove that running out of its own
// descriptors is never taken for a backend's failure. Linux only (it reads /proc/self/fd).
package fdlimit
