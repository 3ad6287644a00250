package main

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/edge"
)

// newEdgeFirewallCmd prints (or applies) the DOCKER-USER rules for an edge whose forwarder runs
// in a container with a published port.
func newEdgeFirewallCmd() *cobra.Command {
	var (
		fw    edge.Firewall
		allow []string
		apply bool
	)
	cmd := &cobra.Command{
		Use:   "firewall --allow CIDR,... --port N --in-interface IFACE [--apply]",
		Short: "Print or apply the firewall rules for an edge in a container: DOCKER-USER, not INPUT",
		Long: `Docker bypasses the host's firewall: a published port is DNATed and forwarded to the
container, so its packets never traverse INPUT, and rules there are decorative. The rules go in
the chain Docker's FORWARD consults first, DOCKER-USER (through our own chain, ZERO502-EDGE, so
re-applying replaces only ours), matching the port on conntrack's original destination port,
since after the DNAT the packet carries the container's port.

That chain sees traffic both ways: replies to the host's own outbound probes (a monitor probing
other edges on the same port) would match the port rule and be dropped, and every edge would look
down while every agent is fine. So an ESTABLISHED,RELATED accept comes first; then the --allow
list; then a drop of every other new connection to --port arriving on --in-interface. IPv4 and
IPv6 both (ip6tables; with no IPv6 source allowed, IPv6 is closed), each family's chain replaced
in one iptables-restore --noflush transaction, so a re-apply never opens a window.

Without --apply the commands are printed; with it they are run (root, Docker's chains
must exist). Exit status: 0 printed or applied, 1 iptables failed, 2 bad flags.`,
		Example: `  zero502 edge firewall --allow 198.51.100.0/24,203.0.113.7 --port 443 --in-interface eth0
  zero502 edge firewall --allow 198.51.100.0/24 --port 443 --in-interface eth0 --apply`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, a := range allow {
				for _, part := range strings.Split(a, ",") {
					p, err := parsePrefix(strings.TrimSpace(part))
					if err != nil {
						return exitCode(2, fmt.Errorf("edge firewall: --allow %q: must be an IPv4 or IPv6 address or CIDR, e.g. 198.51.100.0/24 or 2001:db8::/32 (%v)", part, err))
					}
					fw.Allow = append(fw.Allow, p)
				}
			}
			if err := fw.Validate(); err != nil {
				return exitCode(2, fmt.Errorf("edge firewall: %w", err))
			}
			if !apply {
				_, err := fmt.Fprint(cmd.OutOrStdout(), fw.Script())
				return err
			}
			notes, err := fw.Apply(context.Background(), edge.ExecIPTables())
			for _, n := range notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "edge firewall: %s\n", n)
			}
			if err != nil {
				return exitCode(1, fmt.Errorf("edge firewall: %w", err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "applied: DOCKER-USER → %s\n%s", edge.DefaultFirewallChain, fw.Script())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&allow, "allow", nil, "sources that may reach the port: IPv4 or IPv6 addresses or CIDRs (required); the other family's port is closed to all")
	fl.IntVar(&fw.Port, "port", 0, "the published port on the host (required)")
	fl.StringVar(&fw.InInterface, "in-interface", "", "the external interface clients arrive on, e.g. eth0 (required)")
	fl.BoolVar(&apply, "apply", false, "run the iptables commands instead of printing them")
	return cmd
}

// parsePrefix reads an address (a /32) or a CIDR.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
