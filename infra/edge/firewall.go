package edge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
)

// DefaultFirewallChain is the chain the edge's rules live in; DOCKER-USER jumps to it, so
// re-applying replaces our rules and never touches anyone else's.
const DefaultFirewallChain = "ZERO502-EDGE"

// Firewall is the rule set for an edge host whose forwarder runs in a container with a
// published port, so that only the allowed sources reach it. Two halves of one lesson:
//
//   - Docker bypasses the host's firewall: a published port is DNATed in PREROUTING and the
//     packets are forwarded to the container, so they traverse FORWARD, never INPUT. Rules in
//     INPUT look active and are decorative. Docker's FORWARD jumps to DOCKER-USER first: the
//     rules go there. After the DNAT the destination port is the container's, so the port is
//     matched on conntrack's original destination port (--ctorigdstport), not --dport.
//   - That chain sees traffic both ways: replies to the host's own outbound probes (a monitor
//     in a container probing other edges on the same port) cross it too, and a port rule drops
//     them. So an ESTABLISHED,RELATED accept comes first; then the allow list; then a drop of
//     every other new connection to the port arriving on InInterface.
type Firewall struct {
	// Allow are the sources that may reach the port (IPv4 prefixes).
	Allow []netip.Prefix
	// Port is the published port on the host (what clients connect to).
	Port int
	// InInterface is the external interface the clients arrive on; the drop applies to it only,
	// so containers' own outbound connections to the same port (from the Docker bridge) pass.
	InInterface string
	// Chain is our chain (DefaultFirewallChain when empty).
	Chain string
}

// Validate names the flag, the value and the rule of every problem.
func (f Firewall) Validate() error {
	var errs []error
	if len(f.Allow) == 0 {
		errs = append(errs, errors.New("--allow is empty: list the sources that may reach the port (the edges' or the clients' CIDRs); with none every new connection would be dropped"))
	}
	for _, p := range f.Allow {
		if !p.Addr().Is4() {
			errs = append(errs, fmt.Errorf("--allow %s: only IPv4 prefixes (iptables); write IPv6 rules with ip6tables", p))
		}
	}
	if f.Port < 1 || f.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: must be the published port, from 1 to 65535", f.Port))
	}
	if f.InInterface == "" || strings.ContainsAny(f.InInterface, " /\t") || len(f.InInterface) > 15 {
		errs = append(errs, fmt.Errorf("--in-interface %q: must be the external interface's name (at most 15 characters, e.g. eth0): the drop applies to traffic arriving there", f.InInterface))
	}
	return errors.Join(errs...)
}

func (f Firewall) chain() string {
	if f.Chain == "" {
		return DefaultFirewallChain
	}
	return f.Chain
}

// Rules are the rules of our chain, in order, as iptables arguments.
func (f Firewall) Rules() [][]string {
	port := strconv.Itoa(f.Port)
	match := []string{"-i", f.InInterface, "-p", "tcp", "-m", "conntrack", "--ctorigdstport", port}
	rules := [][]string{{"-A", f.chain(), "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"}}
	for _, p := range f.Allow {
		rules = append(rules, append(append([]string{"-A", f.chain()}, match...), "-s", p.Masked().String(), "-j", "RETURN"))
	}
	return append(rules, append(append([]string{"-A", f.chain()}, match...), "-j", "DROP"))
}

// Script is the whole procedure as iptables commands a person can read and run.
func (f Firewall) Script() string {
	var b strings.Builder
	fmt.Fprintf(&b, "iptables -N %s 2>/dev/null || true\niptables -F %s\n", f.chain(), f.chain())
	for _, r := range f.Rules() {
		fmt.Fprintf(&b, "iptables %s\n", strings.Join(r, " "))
	}
	fmt.Fprintf(&b, "iptables -C DOCKER-USER -j %s 2>/dev/null || iptables -I DOCKER-USER 1 -j %s\n", f.chain(), f.chain())
	return b.String()
}

// IPTables runs iptables with args and returns its combined output. Exec runs it on this host;
// tests run it inside a network namespace.
type IPTables func(ctx context.Context, args ...string) ([]byte, error)

// ExecIPTables is the host's iptables, with prefix before it (e.g. ip netns exec NAME).
func ExecIPTables(prefix ...string) IPTables {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		argv := append(append(append([]string{}, prefix...), "iptables"), args...)
		return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	}
}

// Apply installs the rules: our chain created if missing and flushed, the rules appended, and
// one jump from DOCKER-USER to it inserted first if it is not there yet. Nothing else in any
// chain is touched, so applying twice is applying once.
func (f Firewall) Apply(ctx context.Context, ipt IPTables) error {
	if err := f.Validate(); err != nil {
		return err
	}
	run := func(args ...string) error {
		if out, err := ipt(ctx, args...); err != nil {
			return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	if _, err := ipt(ctx, "-S", "DOCKER-USER"); err != nil {
		return fmt.Errorf("chain DOCKER-USER not found: is Docker running on this host? Published ports never traverse INPUT, " +
			"so the rules must go where Docker's FORWARD looks first")
	}
	if _, err := ipt(ctx, "-S", f.chain()); err != nil {
		if err := run("-N", f.chain()); err != nil {
			return err
		}
	}
	if err := run("-F", f.chain()); err != nil {
		return err
	}
	for _, r := range f.Rules() {
		if err := run(r...); err != nil {
			return err
		}
	}
	if _, err := ipt(ctx, "-C", "DOCKER-USER", "-j", f.chain()); err != nil {
		return run("-I", "DOCKER-USER", "1", "-j", f.chain())
	}
	return nil
}
