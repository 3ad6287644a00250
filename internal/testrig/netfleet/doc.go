// Package netfleet is the tests' fleet of hosts on a real network, on one machine: each host is
// a network namespace of its own, with its own address on a private subnet, its loopback up and
// its own OpenSSH server, joined to this machine by a veth pair into a bridge in the root
// namespace. The root namespace is the deployer's (and the load balancer's) machine, at the
// bridge's address, Gateway. A deployer reaches a host only as it reaches a remote one, over ssh
// to Host.SSH; a balancer reaches its services at Host.Address. A host's link can be cut and
// restored (its veth down or up: a pulled cable), and its ports blocked by iptables inside its
// namespace (a partition that leaves the rest of its network alone). Its sshd also runs in a
// mount namespace of its own where root's home is an empty directory of the host's: a login
// there runs none of this machine's shell rc files, as on a fresh server.
//
// The package owns the namespaces, veths, bridge, keys and sshd processes it creates, and their
// removal: Close kills every process left in a host's namespace (sshd, its sessions, whatever a
// deployer started there) and deletes the namespaces, the veths and the bridge; Build first
// removes what a fleet of an earlier process that is gone left behind (every name carries its
// creator's pid). ForTest ties a fleet to a test through testmain.Track, so that a test binary
// stopped by its -timeout leaves nothing behind either.
//
// Every address is in 10.231.0.0/16, one /24 per fleet (Gateway .1, hosts from .10), on the
// bridge and veths the fleet made: nothing a fleet carries leaves this machine. While a fleet
// exists its subnet also has an unreachable route of a higher metric than the bridge's, so a
// client still sending to it while the bridge goes away gets an error instead of the default
// route.
//
// It is Linux only (network namespaces, veths, iptables); elsewhere the package is empty.
package netfleet
