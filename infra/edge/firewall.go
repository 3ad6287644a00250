package edge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/trust"
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
//
// Both families get the chain: IPv4 through iptables, IPv6 through ip6tables (with no IPv6
// source allowed, every new IPv6 connection to the port is dropped). Each family's chain is
// replaced in one iptables-restore --noflush transaction, so re-applying never leaves a moment
// with the allow list but no DROP; nothing outside our chain and its one jump is touched.
type Firewall struct {
	// Allow are the sources that may reach the port (IPv4 and IPv6 prefixes; an IPv4-mapped IPv6
	// one, ::ffff:198.51.100.7, is its IPv4 prefix).
	Allow []netip.Prefix
	// Port is the published port on the host (what clients connect to).
	Port int
	// InInterface is the external interface the clients arrive on; the drop applies to it only,
	// so containers' own outbound connections to the same port (from the Docker bridge) pass.
	InInterface string
	// Chain is our chain (DefaultFirewallChain when empty).
	Chain string
}

// Family is one address family's packet filter: its iptables program and its restore program.
type Family struct {
	Name    string // "IPv4", "IPv6"
	Tables  string // iptables, ip6tables
	Restore string // iptables-restore, ip6tables-restore
	is      func(netip.Addr) bool
}

// Families are the two the firewall covers, IPv4 first.
var Families = []Family{
	{Name: "IPv4", Tables: "iptables", Restore: "iptables-restore", is: netip.Addr.Is4},
	{Name: "IPv6", Tables: "ip6tables", Restore: "ip6tables-restore", is: netip.Addr.Is6},
}

// Validate names the flag, the value and the rule of every problem.
func (f Firewall) Validate() error {
	var errs []error
	if len(f.Allow) == 0 {
		errs = append(errs, errors.New("--allow is empty: list the sources that may reach the port (the edges' or the clients' CIDRs); with none every new connection would be dropped"))
	}
	for _, p := range f.Allow {
		if !p.IsValid() {
			errs = append(errs, fmt.Errorf("--allow %s: must be an IPv4 or IPv6 address or CIDR", p))
		}
	}
	if f.Port < 1 || f.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: must be the published port, from 1 to 65535", f.Port))
	}
	if !interfaceName(f.InInterface) {
		errs = append(errs, fmt.Errorf("--in-interface %q: must be the external interface's name, 1 to 15 of A-Z a-z 0-9 _ . - (or iptables' + wildcard), e.g. eth0 (see ip link): the drop applies to traffic arriving there", f.InInterface))
	}
	return errors.Join(errs...)
}

// interfaceName says s is what Linux names an interface (1 to 15 characters, never "." or "..";
// the kernel refuses '/', ':' and white space, and this takes only A-Z a-z 0-9 _ . -) or
// iptables' wildcard of one ("eth+"). It goes into the iptables-restore input as it is: a
// newline in it would add lines of its own.
func interfaceName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("_.-+", c)) {
			return false
		}
	}
	return true
}

func (f Firewall) chain() string {
	if f.Chain == "" {
		return DefaultFirewallChain
	}
	return f.Chain
}

// Rules are the rules of our chain for family fam, in order, as iptables arguments.
func (f Firewall) Rules(fam Family) [][]string {
	port := strconv.Itoa(f.Port)
	match := []string{"-i", f.InInterface, "-p", "tcp", "-m", "conntrack", "--ctorigdstport", port}
	rules := [][]string{{"-A", f.chain(), "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"}}
	for _, p := range f.Allow {
		// an IPv4-mapped prefix is the IPv4 one it covers: the packets come from an IPv4
		// source, and only iptables sees them
		if src := config.UnmapPrefix(p); fam.is(src.Addr()) {
			rules = append(rules, append(append([]string{"-A", f.chain()}, match...), "-s", src.String(), "-j", "RETURN"))
		}
	}
	return append(rules, append(append([]string{"-A", f.chain()}, match...), "-j", "DROP"))
}

// restoreInput is family fam's iptables-restore --noflush input: our chain declared (created,
// or flushed within the transaction) and refilled, the jump from DOCKER-USER inserted first
// when jump is set, all in one COMMIT.
func (f Firewall) restoreInput(fam Family, jump bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*filter\n:%s - [0:0]\n", f.chain())
	for _, r := range f.Rules(fam) {
		b.WriteString(strings.Join(r, " ") + "\n")
	}
	if jump {
		fmt.Fprintf(&b, "-I DOCKER-USER 1 -j %s\n", f.chain())
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// Script is the whole procedure as commands a person can read and run: per family, one atomic
// restore of our chain, then the jump from DOCKER-USER added if it is missing.
func (f Firewall) Script() string {
	var b strings.Builder
	for _, fam := range Families {
		fmt.Fprintf(&b, "# %s\n%s --noflush <<'EOF'\n%sEOF\n", fam.Name, fam.Restore, f.restoreInput(fam, false))
		fmt.Fprintf(&b, "%s -C DOCKER-USER -j %s 2>/dev/null || %s -I DOCKER-USER 1 -j %s\n", fam.Tables, f.chain(), fam.Tables, f.chain())
	}
	return b.String()
}

// ipTables runs program (iptables, ip6tables or their -restore) with args and stdin and returns
// its combined output. ExecIPTables runs it on this host; tests run it inside a network namespace.
type ipTables func(ctx context.Context, program string, stdin string, args ...string) ([]byte, error)

// ExecIPTables runs the program on this host, with prefix before it (e.g. ip netns exec NAME).
// It runs as root: the program, and the prefix's, are held to infra/trust as every program
// zero502 runs is, and run by the path that was judged (trustedPath).
func ExecIPTables(prefix ...string) ipTables {
	return func(ctx context.Context, program, stdin string, args ...string) ([]byte, error) {
		argv := append(append(append([]string{}, prefix...), program), args...)
		for _, i := range slices.Compact([]int{0, len(prefix)}) { // the prefix's program, then this one
			p, err := trustedPath(argv[i])
			if err != nil {
				return nil, err
			}
			argv[i] = p
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdin = strings.NewReader(stdin)
		return cmd.CombinedOutput()
	}
}

// trustedPath is where name is found on PATH, once trust.Program holds it and every link and
// directory on the way: that path, not the real one, since iptables and ip6tables are one
// multi-call program (xtables-nft-multi) that picks what to be by the name it was run as.
func trustedPath(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	if _, err := trust.Program(path, os.Getuid()); err != nil {
		return "", err
	}
	return path, nil
}

// Apply installs the rules in each family: our chain replaced in one restore transaction (with
// the jump from DOCKER-USER when it is not there yet), so applying twice is applying once and a
// re-apply has no moment without the DROP. A family whose DOCKER-USER chain is missing fails for
// IPv4 (Docker is not running); for IPv6 it is skipped and said in the notes returned (Docker's
// ip6tables is off: it then publishes IPv6 through docker-proxy, which INPUT does see).
func (f Firewall) Apply(ctx context.Context, ipt ipTables) (notes []string, err error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	for _, fam := range Families {
		if _, err := ipt(ctx, fam.Tables, "", "-S", "DOCKER-USER"); errors.Is(err, trust.ErrRefused) {
			return notes, err // not run at all: nothing says whether the chain is there
		} else if err != nil {
			if fam.Name == "IPv4" {
				return notes, fmt.Errorf("chain DOCKER-USER not found (iptables): is Docker running on this host? Published ports never traverse INPUT, " +
					"so the rules must go where Docker's FORWARD looks first")
			}
			notes = append(notes, fmt.Sprintf("%s: no DOCKER-USER chain in %s (Docker's ip6tables is off): no %s rules applied; "+
				"turn on \"ip6tables\" in /etc/docker/daemon.json, or firewall IPv6 in INPUT, where docker-proxy's connections arrive", fam.Name, fam.Tables, fam.Name))
			continue
		}
		_, missing := ipt(ctx, fam.Tables, "", "-C", "DOCKER-USER", "-j", f.chain())
		in := f.restoreInput(fam, missing != nil)
		if out, err := ipt(ctx, fam.Restore, in, "--noflush"); err != nil {
			return notes, fmt.Errorf("%s --noflush: %w: %s (nothing of this family changed: the restore is one transaction)\ninput:\n%s",
				fam.Restore, err, bytes.TrimSpace(out), in)
		}
	}
	return notes, nil
}
