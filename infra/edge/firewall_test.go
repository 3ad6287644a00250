package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// The firewall helper process: the test binary run inside a network namespace, serving or
// dialling, selected by ZERO502_FW_HELPER ("serve ADDR" or "dial SRC DST").
func TestFirewallHelperProcess(t *testing.T) {
	mode := os.Getenv("ZERO502_FW_HELPER")
	if mode == "" {
		t.Skip("a helper process for TestFirewall..., run by it inside a network namespace")
	}
	f := strings.Fields(mode)
	switch f[0] {
	case "serve":
		ln, err := net.Listen("tcp", f[1])
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			_, _ = io.WriteString(c, "ok\n")
			c.Close()
		}
	case "dial":
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(f[1])}}
		c, err := d.Dial("tcp", f[2])
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		_ = c.SetDeadline(time.Now().Add(time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if line != "ok\n" {
			fmt.Println("no answer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(2)
}

// netLab is three network namespaces made by the test, so no rule touches the machine's own
// chains: "host" (Docker's chain layout, a port published by DNAT), "ctr" (a container behind
// it) and "out" (the internet, with an allowed and a denied address).
type netLab struct {
	t              *testing.T
	host, ctr, out string
}

func (l *netLab) sh(ns string, args ...string) {
	l.t.Helper()
	argv := append([]string{"netns", "exec", ns}, args...)
	if out, err := exec.Command("ip", argv...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

func (l *netLab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newNetLab(t *testing.T) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	for _, tool := range []string{"ip", "iptables", "iptables-restore", "ip6tables", "ip6tables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (apt-get install iproute2 iptables)", tool)
		}
	}
	id := os.Getpid() % 100000
	l := &netLab{t: t, host: fmt.Sprintf("z5fw-h%d", id), ctr: fmt.Sprintf("z5fw-c%d", id), out: fmt.Sprintf("z5fw-o%d", id)}
	for _, ns := range []string{l.host, l.ctr, l.out} {
		l.ip("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		l.sh(ns, "ip", "link", "set", "lo", "up")
	}
	hx, ox, hc, cc := fmt.Sprintf("z5hx%d", id), fmt.Sprintf("z5ox%d", id), fmt.Sprintf("z5hc%d", id), fmt.Sprintf("z5cc%d", id)
	l.ip("link", "add", hx, "netns", l.host, "type", "veth", "peer", "name", ox, "netns", l.out)
	l.ip("link", "add", hc, "netns", l.host, "type", "veth", "peer", "name", cc, "netns", l.ctr)
	l.sh(l.host, "ip", "link", "set", hx, "name", "ext0")
	l.sh(l.host, "ip", "link", "set", hc, "name", "docker0")
	l.sh(l.host, "ip", "addr", "add", "10.100.0.1/24", "dev", "ext0")
	l.sh(l.host, "ip", "addr", "add", "10.200.0.1/24", "dev", "docker0")
	l.sh(l.host, "ip", "link", "set", "ext0", "up")
	l.sh(l.host, "ip", "link", "set", "docker0", "up")
	l.sh(l.host, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	l.sh(l.out, "ip", "addr", "add", "10.100.0.2/24", "dev", ox)
	l.sh(l.out, "ip", "addr", "add", "10.100.0.3/24", "dev", ox)
	l.sh(l.out, "ip", "link", "set", ox, "up")
	l.sh(l.ctr, "ip", "addr", "add", "10.200.0.2/24", "dev", cc)
	l.sh(l.ctr, "ip", "link", "set", cc, "up")
	l.sh(l.ctr, "ip", "route", "add", "default", "via", "10.200.0.1")

	// Docker's layout: FORWARD jumps to DOCKER-USER first; the published port 443 is DNATed
	// to the container's 8443; the container's outbound traffic is masqueraded.
	for _, rule := range [][]string{
		{"-N", "DOCKER-USER"}, {"-N", "DOCKER"}, {"-P", "FORWARD", "DROP"},
		{"-A", "FORWARD", "-j", "DOCKER-USER"},
		{"-A", "FORWARD", "-o", "docker0", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"},
		{"-A", "FORWARD", "-o", "docker0", "-j", "DOCKER"},
		{"-A", "FORWARD", "-i", "docker0", "-j", "ACCEPT"},
		{"-A", "DOCKER", "-d", "10.200.0.2/32", "-i", "ext0", "-o", "docker0", "-p", "tcp", "--dport", "8443", "-j", "ACCEPT"},
		{"-A", "DOCKER-USER", "-j", "RETURN"},
		{"-t", "nat", "-A", "PREROUTING", "-i", "ext0", "-p", "tcp", "--dport", "443", "-j", "DNAT", "--to-destination", "10.200.0.2:8443"},
		{"-t", "nat", "-A", "POSTROUTING", "-s", "10.200.0.0/24", "-o", "ext0", "-j", "MASQUERADE"},
	} {
		l.sh(l.host, append([]string{"iptables"}, rule...)...)
	}
	l.sh(l.host, "ip6tables", "-N", "DOCKER-USER") // Docker with ip6tables on (its default since 27)
	l.serve(l.ctr, "10.200.0.2:8443")              // the edge's forwarder, in its container
	l.serve(l.out, "10.100.0.3:443")               // another edge, which the host's monitor probes
	return l
}

// ipv6 gives the lab IPv6 the way Docker with ip6tables on lays it out: the same three
// namespaces on ULA addresses (fd00:100::/64 outside, fd00:200::/64 the bridge), the published
// port 443 DNATed to the container's 8443, FORWARD jumping to DOCKER-USER first, and the
// container's outbound traffic routed (Docker does not masquerade IPv6 by default).
func (l *netLab) ipv6() {
	l.t.Helper()
	ox, cc := l.peer(l.out), l.peer(l.ctr)
	l.sh(l.host, "ip", "-6", "addr", "add", "fd00:100::1/64", "dev", "ext0", "nodad")
	l.sh(l.host, "ip", "-6", "addr", "add", "fd00:200::1/64", "dev", "docker0", "nodad")
	l.sh(l.host, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	for _, a := range []string{"fd00:100::2/64", "fd00:100::3/64"} {
		l.sh(l.out, "ip", "-6", "addr", "add", a, "dev", ox, "nodad")
	}
	l.sh(l.out, "ip", "-6", "route", "add", "fd00:200::/64", "via", "fd00:100::1")
	l.sh(l.ctr, "ip", "-6", "addr", "add", "fd00:200::2/64", "dev", cc, "nodad")
	l.sh(l.ctr, "ip", "-6", "route", "add", "default", "via", "fd00:200::1")
	for _, rule := range [][]string{
		{"-N", "DOCKER"}, {"-P", "FORWARD", "DROP"},
		{"-A", "FORWARD", "-j", "DOCKER-USER"},
		{"-A", "FORWARD", "-o", "docker0", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"},
		{"-A", "FORWARD", "-o", "docker0", "-j", "DOCKER"},
		{"-A", "FORWARD", "-i", "docker0", "-j", "ACCEPT"},
		{"-A", "DOCKER", "-d", "fd00:200::2/128", "-i", "ext0", "-o", "docker0", "-p", "tcp", "--dport", "8443", "-j", "ACCEPT"},
		{"-A", "DOCKER-USER", "-j", "RETURN"},
		{"-t", "nat", "-A", "PREROUTING", "-i", "ext0", "-p", "tcp", "--dport", "443", "-j", "DNAT", "--to-destination", "[fd00:200::2]:8443"},
	} {
		l.sh(l.host, append([]string{"ip6tables"}, rule...)...)
	}
	l.serve(l.ctr, "[fd00:200::2]:8443")
	l.serve(l.out, "[fd00:100::3]:443")
}

// peer is the name of ns's one veth (the end facing the host).
func (l *netLab) peer(ns string) string {
	l.t.Helper()
	id := os.Getpid() % 100000
	if ns == l.out {
		return fmt.Sprintf("z5ox%d", id)
	}
	return fmt.Sprintf("z5cc%d", id)
}

// serve runs a helper that answers "ok" on addr inside ns.
func (l *netLab) serve(ns, addr string) {
	l.t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestFirewallHelperProcess$")
	cmd.Env = append(os.Environ(), "ZERO502_FW_HELPER=serve "+addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		l.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		l.t.Fatalf("helper serving %s in %s: %q", addr, ns, line)
	}
}

// reaches reports whether a connection from src (inside ns) to dst gets its answer.
func (l *netLab) reaches(ns, src, dst string) bool {
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestFirewallHelperProcess$")
	cmd.Env = append(os.Environ(), "ZERO502_FW_HELPER=dial "+src+" "+dst)
	return cmd.Run() == nil
}

func TestFirewallInDockerUserLetsTheAllowedInDropsTheRestAndKeepsOutboundProbesAnswered(t *testing.T) {
	l := newNetLab(t)
	const allowed, denied, published = "10.100.0.2", "10.100.0.3", "10.100.0.1:443"
	if !l.reaches(l.out, allowed, published) || !l.reaches(l.out, denied, published) {
		t.Fatal("the lab is broken: without rules both sources must reach the published port")
	}

	// The first half of the lesson: a rule in INPUT is decorative for a published port.
	l.sh(l.host, "iptables", "-A", "INPUT", "-p", "tcp", "--dport", "443", "-j", "DROP")
	if !l.reaches(l.out, denied, published) {
		t.Error("an INPUT drop stopped a published port; the lesson says it never sees it")
	}

	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix(allowed + "/32")}, Port: 443, InInterface: "ext0"}
	ipt := ExecIPTables("ip", "netns", "exec", l.host)
	for range 2 { // applying twice is applying once
		if notes, err := fw.Apply(context.Background(), ipt); err != nil || len(notes) > 0 {
			t.Fatal(err, notes)
		}
	}
	out, _ := ipt(context.Background(), "iptables", "", "-S", "DOCKER-USER")
	if n := strings.Count(string(out), "-j "+DefaultFirewallChain); n != 1 {
		t.Errorf("DOCKER-USER jumps to %s %d times, want once:\n%s", DefaultFirewallChain, n, out)
	}
	if !l.reaches(l.out, allowed, published) {
		t.Error("the allowed source no longer reaches the published port")
	}
	if l.reaches(l.out, denied, published) {
		t.Error("another source still reaches the published port")
	}
	if !l.reaches(l.ctr, "10.200.0.2", denied+":443") {
		t.Error("the host's outbound probe to an edge on the same port lost its reply")
	}

	// The second half: without the ESTABLISHED,RELATED accept first, the replies to that
	// probe match the port rule (the chain sees both directions) and are dropped.
	l.sh(l.host, "iptables", "-D", DefaultFirewallChain, "1")
	if l.reaches(l.ctr, "10.200.0.2", denied+":443") {
		t.Error("without the ESTABLISHED,RELATED accept the probe's reply still passed; the rule would be unnecessary")
	}
}

// Re-applying replaces the chain in one transaction: a reader of the chain all along never sees
// it without its DROP (flush, then append, one command at a time, left that window open).
func TestFirewallReapplyNeverShowsTheChainWithoutItsDrop(t *testing.T) {
	l := newNetLab(t)
	ctx := context.Background()
	ipt := ExecIPTables("ip", "netns", "exec", l.host)
	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("10.100.0.2/32")}, Port: 443, InInterface: "ext0"}
	if _, err := fw.Apply(ctx, ipt); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	seen := make(chan []string, 1)
	go func() {
		var bad []string
		for n := 0; ; n++ {
			select {
			case <-stop:
				seen <- bad
				return
			default:
			}
			out, err := ipt(ctx, "iptables", "", "-S", DefaultFirewallChain)
			if err != nil || !strings.Contains(string(out), "-j DROP") {
				bad = append(bad, fmt.Sprintf("read %d: %v\n%s", n, err, out))
			}
		}
	}()
	for i := range 30 {
		fw.Allow = []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.100.0.%d/32", 2+i%2))}
		if _, err := fw.Apply(ctx, ipt); err != nil {
			close(stop)
			t.Fatal(err)
		}
	}
	close(stop)
	if bad := <-seen; len(bad) > 0 {
		t.Fatalf("%d reads of the chain during 30 re-applies found no DROP, e.g.\n%s", len(bad), bad[0])
	}
}

// IPv6 gets the same chain through ip6tables: its allowed sources, and the DROP (with no IPv6
// source allowed, only the DROP); with Docker's ip6tables off, IPv6 is skipped and said.
func TestFirewallCoversIPv6(t *testing.T) {
	l := newNetLab(t)
	ctx := context.Background()
	ipt := ExecIPTables("ip", "netns", "exec", l.host)
	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("10.100.0.2/32"), netip.MustParsePrefix("2001:db8:1::/48")},
		Port: 443, InInterface: "ext0"}
	if notes, err := fw.Apply(ctx, ipt); err != nil || len(notes) > 0 {
		t.Fatal(err, notes)
	}
	v6, _ := ipt(ctx, "ip6tables", "", "-S", DefaultFirewallChain)
	v4, _ := ipt(ctx, "iptables", "", "-S", DefaultFirewallChain)
	if !strings.Contains(string(v6), "-s 2001:db8:1::/48") || !strings.Contains(string(v6), "-j DROP") || strings.Contains(string(v6), "10.100.0.2") {
		t.Errorf("ip6tables chain lacks the IPv6 allow or the DROP, or holds IPv4:\n%s", v6)
	}
	if strings.Contains(string(v4), "2001:db8") || !strings.Contains(string(v4), "-s 10.100.0.2/32") {
		t.Errorf("iptables chain:\n%s\nwant the IPv4 allow only", v4)
	}
	if out, _ := ipt(ctx, "ip6tables", "", "-S", "DOCKER-USER"); strings.Count(string(out), "-j "+DefaultFirewallChain) != 1 {
		t.Errorf("ip6tables DOCKER-USER:\n%s\nwant one jump to %s", out, DefaultFirewallChain)
	}

	fw.Allow = fw.Allow[:1] // IPv4 only: IPv6 is closed, not open
	if _, err := fw.Apply(ctx, ipt); err != nil {
		t.Fatal(err)
	}
	v6, _ = ipt(ctx, "ip6tables", "", "-S", DefaultFirewallChain)
	if strings.Contains(string(v6), "-j RETURN") || !strings.Contains(string(v6), "--ctorigdstport 443 -j DROP") {
		t.Errorf("with no IPv6 source allowed, the ip6tables chain:\n%s\nwant the DROP and no allow", v6)
	}

	l.sh(l.host, "ip6tables", "-F", "DOCKER-USER")
	l.sh(l.host, "ip6tables", "-X", "DOCKER-USER")
	notes, err := fw.Apply(ctx, ipt)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "IPv6") || !strings.Contains(notes[0], "ip6tables") {
		t.Errorf("Apply without ip6tables' DOCKER-USER: %v, notes %q; want IPv4 applied and a note naming IPv6", err, notes)
	}
}

func TestFirewallRefusesBadInputNamingFlagValueAndRule(t *testing.T) {
	err := Firewall{Allow: nil, Port: 0, InInterface: ""}.Validate()
	for _, want := range []string{"--allow is empty", "--port 0", "--in-interface"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	s := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, Port: 443, InInterface: "eth0"}.Script()
	for _, want := range []string{
		"iptables-restore --noflush <<'EOF'\n*filter\n:ZERO502-EDGE - [0:0]\n",
		"-A ZERO502-EDGE -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n",
		"-i eth0 -p tcp -m conntrack --ctorigdstport 443 -s 198.51.100.0/24 -j RETURN\n",
		"-i eth0 -p tcp -m conntrack --ctorigdstport 443 -j DROP\nCOMMIT\nEOF\n",
		"iptables -I DOCKER-USER 1 -j ZERO502-EDGE",
		"ip6tables-restore --noflush <<'EOF'\n",
		"ip6tables -I DOCKER-USER 1 -j ZERO502-EDGE",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "INPUT") {
		t.Errorf("script touches INPUT:\n%s", s)
	}
}

// The IPv6 chain holds for packets, not only in its listing: over IPv6 through Docker's
// layout, the allowed source reaches the published port, another does not, the container's
// own outbound probe to an edge on that port keeps its replies; with no IPv6 source allowed,
// no IPv6 client gets in while IPv4's allowed one still does.
func TestFirewallFiltersIPv6Packets(t *testing.T) {
	l := newNetLab(t)
	l.ipv6()
	const allowed, denied, published = "fd00:100::2", "fd00:100::3", "[fd00:100::1]:443"
	// a new IPv6 link takes a moment (neighbour discovery, the router's own addresses): without
	// rules, both sources reach the published port within the deadline, or the lab is broken
	poll.Until(t, deadline, "both IPv6 sources to reach the published port, before any rule", func() bool {
		return l.reaches(l.out, allowed, published) && l.reaches(l.out, denied, published)
	})
	ctx := context.Background()
	ipt := ExecIPTables("ip", "netns", "exec", l.host)
	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("10.100.0.2/32"), netip.MustParsePrefix(allowed + "/128")},
		Port: 443, InInterface: "ext0"}
	if notes, err := fw.Apply(ctx, ipt); err != nil || len(notes) > 0 {
		t.Fatal(err, notes)
	}
	if !l.reaches(l.out, allowed, published) {
		t.Error("the allowed IPv6 source no longer reaches the published port")
	}
	if l.reaches(l.out, denied, published) {
		t.Error("another IPv6 source still reaches the published port")
	}
	if !l.reaches(l.ctr, "fd00:200::2", "["+denied+"]:443") {
		t.Error("the container's outbound IPv6 probe to an edge on the same port lost its reply")
	}

	fw.Allow = fw.Allow[:1] // IPv4 only: IPv6 is closed, not open
	if _, err := fw.Apply(ctx, ipt); err != nil {
		t.Fatal(err)
	}
	if l.reaches(l.out, allowed, published) {
		t.Error("with no IPv6 source allowed, an IPv6 client still reaches the published port")
	}
	if !l.reaches(l.out, "10.100.0.2", "10.100.0.1:443") {
		t.Error("the allowed IPv4 source no longer reaches the published port")
	}
}

// --in-interface must be a Linux interface name: a newline in it would become extra lines of the
// iptables-restore input ("x\n-F\n#" turns each rule into "-A ZERO502-EDGE -i x", then "-F",
// which flushes every chain of the filter table, Docker's included). Validate refuses it, naming
// the flag, before anything is applied.
func TestFirewallRefusesAnInterfaceNameWithANewline(t *testing.T) {
	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, Port: 443, InInterface: "x\n-F\n#"}
	if err := fw.Validate(); err == nil {
		in := fw.restoreInput(Families[0], true)
		flush := 0
		for _, line := range strings.Split(in, "\n") {
			if line == "-F" {
				flush++
			}
		}
		t.Fatalf("Validate accepted --in-interface %q; the restore input has %d bare \"-F\" lines:\n%s", fw.InInterface, flush, in)
	} else if !strings.Contains(err.Error(), "--in-interface") {
		t.Errorf("error %v does not name --in-interface", err)
	}
}

// An IPv4-mapped IPv6 source (--allow ::ffff:198.51.100.7, as pasted from an IPv6 socket's
// peer) is an IPv4 source: the IPv4 (iptables) rules allow it as 198.51.100.7/32, never as
// "::ffff:198.51.100.7/128", which iptables cannot parse; a mapped prefix /96+n is the IPv4 /n.
func TestFirewallIPv4MappedAllowIsUnmapped(t *testing.T) {
	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("::ffff:198.51.100.7/128"), netip.MustParsePrefix("::ffff:203.0.113.0/120")},
		Port: 443, InInterface: "eth0"}
	if err := fw.Validate(); err != nil {
		t.Fatal(err)
	}
	var v4 []string
	for _, r := range fw.Rules(Families[0]) {
		s := strings.Join(r, " ")
		if strings.Contains(s, "::ffff:") {
			t.Fatalf("Validate accepted --allow ::ffff:198.51.100.7 and the IPv4 (iptables) rules hold an IPv6 source: %q", s)
		}
		v4 = append(v4, s)
	}
	for _, want := range []string{"-s 198.51.100.7/32 -j RETURN", "-s 203.0.113.0/24 -j RETURN"} {
		if !strings.Contains(strings.Join(v4, "\n"), want) {
			t.Errorf("the IPv4 rules lack %q:\n%s", want, strings.Join(v4, "\n"))
		}
	}
	for _, r := range fw.Rules(Families[1]) {
		if slices.Contains(r, "-s") {
			t.Errorf("the IPv6 rules allow an IPv4-mapped source: %q", strings.Join(r, " "))
		}
	}
}

// --in-interface takes what Linux names an interface (1 to 15 of A-Z a-z 0-9 _ . -, or
// iptables' trailing "+" wildcard) and refuses the rest, naming the flag and the value.
func TestFirewallInterfaceNames(t *testing.T) {
	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, Port: 443}
	for _, name := range []string{"eth0", "enp0s31f6", "br-1a2b3c4d5e6f", "eth0.100", "veth_a", "eth+"} {
		fw.InInterface = name
		if err := fw.Validate(); err != nil {
			t.Errorf("--in-interface %q refused: %v", name, err)
		}
	}
	for _, name := range []string{"", "eth0 ", "a/b", "eth0:1", "x\rF", "eth0\x00", "0123456789abcdef", ".", "..", "ethé"} {
		fw.InInterface = name
		err := fw.Validate()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--in-interface %q", name)) {
			t.Errorf("--in-interface %q: error %v, want one naming the flag and the value", name, err)
		}
	}
}

// `edge firewall --apply` runs as root: the iptables it runs is held to infra/trust, as every
// program zero502 runs is. One found on PATH in a directory anyone may write (0777) never runs:
// Apply fails naming the directory and its mode (not a missing DOCKER-USER chain).
func TestAnIPTablesAnotherUserCouldChangeIsNotRun(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := root + "/bin"
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o777); err != nil {
		t.Fatal(err)
	}
	marker := root + "/ran"
	if err := os.WriteFile(bin+"/iptables", []byte("#!/bin/sh\n: > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	fw := Firewall{Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, Port: 443, InInterface: "eth0"}
	_, err := fw.Apply(context.Background(), ExecIPTables())
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatalf("the iptables of a 0777 directory ran (err %v); want it refused before it runs", err)
	}
	if err == nil || !strings.Contains(err.Error(), bin) || !strings.Contains(err.Error(), "0777") {
		t.Errorf("Apply = %v; want a refusal naming %s and its mode 0777", err, bin)
	}
}
