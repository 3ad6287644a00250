// Package fleettest holds the tests of zero502 against a fleet of hosts on a real network
// (internal/testrig/netfleet): every host a network namespace of its own with its own address and
// sshd, the deployer and the in-house LB on this machine at the fleet's gateway, the services run
// on the hosts by `zero502 host step` through their sshd, as on remote machines. They run the
// real binary only (deploy, status, lb, watchdog, host step) and cut links and ports under it:
// the fleet lock held on the lock host through ssh against two deployers on different machines
// (mount namespaces that share no files with the hosts), the watchdog judging by the service's
// own health rule on the host, a host lost before and during its step, and partitions between
// the deployer, the LB and a host.
//
// The package has no code of its own: it is apart from package deployer so that deployer's
// own tests do not wait for these, which need root and Linux (they skip without root or the
// tools, and fail instead under CI=true; elsewhere than Linux there is nothing to run).
package fleettest
