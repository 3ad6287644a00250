// Package handoff upgrades a running server in place, on one box, without a gap: on SIGHUP the
// running process starts a new copy of its executable (re-read from disk, so it may be a new
// binary) with the same arguments and hands it its listening sockets (github.com/cloudflare/
// tableflip passes them as inherited file descriptors). The new process loads its config, opens
// its listeners from the inherited sockets, starts serving and reports ready; only then does the
// old one drain as on SIGTERM and exit. A new process that fails (bad config, crash, no ready
// within the timeout) leaves the old one serving, and the reason is recorded.
//
// The sockets never close during an upgrade: both processes hold them while the old one drains,
// so the kernel queues new connections whichever process accepts them. Nothing is refused.
//
// Two files beside each other carry the upgrade between processes and to `zero502 lb upgrade`:
// the pid file (the process that serves now: a first process writes it when it is ready; in an
// upgrade the new process puts its pid in the attempt file and the old one writes it to the pid
// file only as it accepts the new one's ready, so a new process it refuses or kills is never
// named there) and the attempt file (pid file + ".handoff.json": the last upgrade's sequence
// number, state, new pid and reason). Request is
// the command's side: it signals the process the pid file names and waits for the attempt to
// end. Windows has no way to pass listening sockets on: there the listeners open as usual and an
// upgrade says it is not supported.
package handoff
