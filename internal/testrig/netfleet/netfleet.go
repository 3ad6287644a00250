//go:build linux

package netfleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Prefix starts the name of every namespace, link and bridge a fleet makes, followed by its
// creator's pid and a letter per fleet of that process: z5n4711a-host-01, z5n4711abr, z5n4711av0.
const Prefix = "z5n"

// subnetBase is the /16 the fleets' subnets are cut from: fleet k is 10.231.k.0/24.
const subnetBase = "10.231."

// MaxHosts is the most hosts a fleet can have (.10 to .254 of its /24).
const MaxHosts = 245

// guardMetric is the metric of a fleet's unreachable route: above the bridge's own route (0).
const guardMetric = "4242"

// lockFile serialises the choice of a subnet between processes (and Sweep against a Build).
var lockFile = filepath.Join(os.TempDir(), "zero502-netfleet.lock")

// Options say what fleet to build.
type Options struct {
	// Hosts is how many hosts (1..MaxHosts).
	Hosts int
	// Dir holds the fleet's keys, sshd configs and logs (required; the caller removes it).
	Dir string
	// Track, when set, is called with the fleet's Close as soon as there is anything to remove,
	// before the hosts are made (ForTest passes testmain.Track's registration).
	Track func(close func())
}

// Fleet is a built fleet. Its fields are read-only.
type Fleet struct {
	// ID is the fleet's name prefix: Prefix, the creator's pid and a letter.
	ID string
	// Bridge is the bridge in the root namespace; Gateway is its address, where the hosts see
	// this machine (the deployer, the balancer); Subnet is the fleet's /24.
	Bridge, Gateway, Subnet string
	Hosts                   []*Host
	// SSHOptions are the ssh client options that reach the hosts (the key the fleet made, its
	// own known_hosts file, a connect timeout of 3s and keepalives that notice a cut link within
	// about 3s), for ZERO502_SSH_OPTS.
	SSHOptions []string

	dir string
	// mu guards Subnet, Hosts and each host's sshd while Build makes them: Close may run
	// meanwhile (a test binary's timeout sweeps every half second), and removes what exists.
	mu sync.Mutex
	// closing serialises Close.
	closing sync.Mutex
}

// Host is one host of a fleet.
type Host struct {
	// Name is the host's name for a config (host-01, host-02, …).
	Name string
	// Namespace is its network namespace; Address its address (its sshd and services listen
	// there); SSH its ssh target, root@Address.
	Namespace, Address, SSH string
	// Veth is the root namespace's end of its link (inside, the link is eth0).
	Veth string

	sshd   *exec.Cmd
	exited chan struct{}
	log    string
}

// SSHOptsEnv is the environment variable the deployer reads extra ssh options from
// (deployer.SSHOptsEnv; not imported, so this rig depends on no part of zero502 it tests).
const SSHOptsEnv = "ZERO502_SSH_OPTS"

// Env is the environment entry that points a deployer's ssh at the fleet: ZERO502_SSH_OPTS=….
func (f *Fleet) Env() string { return SSHOptsEnv + "=" + strings.Join(f.SSHOptions, " ") }

// SSHCommand is the ssh client running the shell command remote on host h, as a deployer runs it.
func (f *Fleet) SSHCommand(ctx context.Context, h *Host, remote string) *exec.Cmd {
	args := append(append([]string(nil), f.SSHOptions...), "-o", "BatchMode=yes", h.SSH, remote)
	return exec.CommandContext(ctx, "ssh", args...)
}

// Available says what this machine lacks to build a fleet (nil: nothing).
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("netfleet: network namespaces, veths and sshd need root")
	}
	var missing []string
	for _, tool := range []string{"ip", "iptables", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		missing = append(missing, "/usr/sbin/sshd")
	}
	if len(missing) > 0 {
		return fmt.Errorf("netfleet: %s not installed (apt-get install iproute2 iptables openssh-client openssh-server)",
			strings.Join(missing, ", "))
	}
	return nil
}

var fleets atomic.Int32 // fleets this process built: the letter of the next one

// Build makes a fleet of o.Hosts hosts and waits until every host's sshd accepts a login. On
// error, whatever it made is removed again.
func Build(o Options) (_ *Fleet, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if o.Hosts < 1 || o.Hosts > MaxHosts {
		return nil, fmt.Errorf("netfleet: %d hosts: give 1 to %d", o.Hosts, MaxHosts)
	}
	if o.Dir == "" {
		return nil, errors.New("netfleet: Options.Dir is required: where the fleet's keys and sshd logs go")
	}
	seq := fleets.Add(1) - 1
	if seq >= 26 {
		return nil, errors.New("netfleet: at most 26 fleets per process (one letter each in the names)")
	}
	if err := Sweep(); err != nil {
		return nil, err
	}
	f := &Fleet{ID: fmt.Sprintf("%s%d%c", Prefix, os.Getpid(), 'a'+seq), dir: o.Dir}
	f.Bridge = f.ID + "br"
	if err := f.keys(); err != nil {
		return nil, err
	}
	if o.Track != nil {
		o.Track(func() { _ = f.Close() })
	}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	if err := f.bridge(); err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(f.Subnet, "0/24")
	f.mu.Lock()
	for i := range o.Hosts {
		name := fmt.Sprintf("host-%02d", i+1)
		addr := prefix + strconv.Itoa(10+i)
		f.Hosts = append(f.Hosts, &Host{Name: name, Namespace: f.ID + "-" + name, Address: addr, SSH: "root@" + addr,
			Veth: fmt.Sprintf("%sv%d", f.ID, i), log: filepath.Join(o.Dir, name+".sshd.log")})
	}
	f.mu.Unlock()
	if err := f.links(); err != nil {
		return nil, err
	}
	for _, h := range f.Hosts {
		if err := f.startSSHD(h); err != nil {
			return nil, err
		}
	}
	if err := f.awaitLogins(30 * time.Second); err != nil {
		return nil, err
	}
	return f, nil
}

// keys makes the fleet's host key (one for every sshd) and client key.
func (f *Fleet) keys() error {
	for _, k := range []string{"host_key", "client_key"} {
		path := filepath.Join(f.dir, k)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "netfleet", "-f", path).CombinedOutput(); err != nil {
			return fmt.Errorf("netfleet: ssh-keygen %s: %w: %s", path, err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(f.dir, "client_key.pub"))
	if err != nil {
		return fmt.Errorf("netfleet: %w", err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "authorized_keys"), pub, 0o600); err != nil {
		return fmt.Errorf("netfleet: %w", err)
	}
	f.SSHOptions = []string{"-F", "/dev/null", "-i", filepath.Join(f.dir, "client_key"), "-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + filepath.Join(f.dir, "known_hosts"), "-o", "StrictHostKeyChecking=accept-new",
		"-o", "LogLevel=ERROR", "-o", "ConnectTimeout=3", "-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=3"}
	return nil
}

// bridge picks a free /24 (under the lock, so two processes never pick one) and makes the bridge
// with the gateway address on it, behind the fleet's unreachable guard route.
func (f *Fleet) bridge() error {
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	used, err := usedSubnets()
	if err != nil {
		return err
	}
	subnet := ""
	for k := 1; k < 255 && subnet == ""; k++ {
		if s := fmt.Sprintf("%s%d.0/24", subnetBase, k); !used[s] {
			subnet = s
		}
	}
	if subnet == "" {
		return fmt.Errorf("netfleet: every /24 of %s0.0/16 is in use (ip route): remove leftover fleets with Sweep", subnetBase)
	}
	f.mu.Lock()
	f.Subnet, f.Gateway = subnet, strings.TrimSuffix(subnet, "0/24")+"1"
	f.mu.Unlock()
	return ipBatch("", []string{
		"route add unreachable " + f.Subnet + " metric " + guardMetric,
		"link add " + f.Bridge + " type bridge",
		"addr add " + f.Gateway + "/24 dev " + f.Bridge,
		"link set " + f.Bridge + " up",
	})
}

// links makes each host's namespace and its veth into the bridge, and sets its addresses.
func (f *Fleet) links() error {
	var root []string
	for _, h := range f.Hosts {
		root = append(root, "netns add "+h.Namespace,
			"link add "+h.Veth+" type veth peer name eth0 netns "+h.Namespace,
			"link set "+h.Veth+" master "+f.Bridge,
			"link set "+h.Veth+" up")
	}
	if err := ipBatch("", root); err != nil {
		return err
	}
	for _, h := range f.Hosts {
		if err := ipBatch(h.Namespace, []string{"link set lo up", "addr add " + h.Address + "/24 dev eth0", "link set eth0 up"}); err != nil {
			return err
		}
	}
	return nil
}

// startSSHD runs the host's own sshd inside its namespace, listening on its address only. It
// drops a client it has not heard from for about 3s (ClientAliveInterval 1, CountMax 3), as a
// server configured to notice vanished deployers does: the step then sees its stdin end. For
// the tests' sake a login is cheap: key exchange by curve25519 only (not the slower default
// sntrup761 hybrid) and no re-exec of sshd per connection (-r).
func (f *Fleet) startSSHD(h *Host) error {
	conf := filepath.Join(f.dir, h.Name+".sshd_config")
	data := fmt.Sprintf(`ListenAddress %s:22
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
ClientAliveInterval 1
ClientAliveCountMax 3
MaxStartups 200
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
MaxSessions 100
LogLevel INFO
`, h.Address, filepath.Join(f.dir, "host_key"), filepath.Join(f.dir, "authorized_keys"), filepath.Join(f.dir, h.Name+".sshd.pid"))
	if err := os.WriteFile(conf, []byte(data), 0o600); err != nil {
		return fmt.Errorf("netfleet: %w", err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // its privilege separation dir
		return fmt.Errorf("netfleet: %w", err)
	}
	logf, err := os.Create(h.log)
	if err != nil {
		return fmt.Errorf("netfleet: %w", err)
	}
	defer logf.Close()
	home := filepath.Join(f.dir, "home", h.Name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("netfleet: %w", err)
	}
	// ip netns exec gives sshd a mount namespace of its own (a slave of this machine's): the
	// host's root gets an empty home there, as on a fresh server, instead of this machine's
	// (whose shell rc files would run at every login: a second each with pyenv's).
	cmd := exec.Command("ip", "netns", "exec", h.Namespace, "sh", "-c", `mount --bind "$1" "$2" && shift 2 && exec "$@"`,
		"sh", home, rootHome(), "/usr/sbin/sshd", "-D", "-e", "-r", "-f", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	// sshd dies with whoever built the fleet, even by SIGKILL or a test binary's timeout panic
	// (what it leaves in the namespace, the next Build's Sweep removes).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("netfleet: start sshd on %s: %w", h.Name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	f.mu.Lock()
	h.sshd, h.exited = cmd, exited
	f.mu.Unlock()
	return nil
}

// rootHome is the home directory of root, the user the hosts are logged in as.
func rootHome() string {
	if u, err := user.Lookup("root"); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	return "/root"
}

// awaitLogins waits until every host's sshd lets the fleet's key log in.
func (f *Fleet) awaitLogins(within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	errs := make([]error, len(f.Hosts))
	var wg sync.WaitGroup
	for i, h := range f.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-h.exited:
					errs[i] = fmt.Errorf("netfleet: sshd of %s exited at start: %s", h.Name, tail(h.log, 1500))
					return
				default:
				}
				out, err := f.SSHCommand(ctx, h, "true").CombinedOutput()
				if err == nil {
					return
				}
				if ctx.Err() != nil {
					errs[i] = fmt.Errorf("netfleet: no ssh login to %s within %s: %v: %s\nsshd log: %s", h.Name, within, err, out, tail(h.log, 1500))
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Exec is command name with args run inside host h's namespace.
func (h *Host) Exec(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Namespace, name}, args...)...)
}

// Cut takes the host's link down, as a pulled cable: nothing reaches it and nothing leaves it,
// and what was in flight on its connections gets no answer, no reset.
func (h *Host) Cut() error { return ipBatch("", []string{"link set " + h.Veth + " down"}) }

// Restore brings the host's link up again.
func (h *Host) Restore() error { return ipBatch("", []string{"link set " + h.Veth + " up"}) }

// Block drops, inside the host, every TCP packet that arrives over its link for one of ports
// (its own loopback is spared): whoever reaches it there, deployer or balancer, gets no answer,
// and connections already open on those ports hang. Other ports are untouched.
func (h *Host) Block(ports ...int) error {
	if len(ports) == 0 {
		return errors.New("netfleet: Block needs at least one port")
	}
	list := make([]string, len(ports))
	for i, p := range ports {
		list[i] = strconv.Itoa(p)
	}
	return h.iptables("-A", "INPUT", "-i", "eth0", "-p", "tcp", "-m", "multiport", "--dports", strings.Join(list, ","), "-j", "DROP")
}

// Unblock removes every block of the host.
func (h *Host) Unblock() error { return h.iptables("-F", "INPUT") }

func (h *Host) iptables(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := h.Exec(ctx, "iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("netfleet: iptables %s in %s: %w: %s", strings.Join(args, " "), h.Namespace, err, out)
	}
	return nil
}

// Pids are the processes running in the host's namespace (its sshd, its sessions, its services).
func (h *Host) Pids() ([]int, error) { return nsPids(h.Namespace) }

// Close stops every process in the hosts' namespaces and removes the namespaces, veths, bridge
// and guard route. It is safe to call more than once, from several goroutines, and while Build
// still runs (it removes what exists; call it again once Build returned).
func (f *Fleet) Close() error {
	f.closing.Lock()
	defer f.closing.Unlock()
	f.mu.Lock()
	hosts, subnet := slices.Clone(f.Hosts), f.Subnet
	type daemon struct {
		cmd    *exec.Cmd
		exited chan struct{}
	}
	var sshds []daemon
	for _, h := range hosts {
		if h.sshd != nil {
			sshds = append(sshds, daemon{h.sshd, h.exited})
		}
	}
	f.mu.Unlock()
	var errs []error
	for _, d := range sshds {
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	for _, h := range hosts {
		if err := removeNamespace(h.Namespace); err != nil {
			errs = append(errs, err)
		}
	}
	unlock, err := lock()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer unlock()
	for _, h := range hosts {
		if linkExists(h.Veth) { // gone with its namespace already, unless a process kept it
			_ = ipQuiet("link", "del", h.Veth)
		}
	}
	if linkExists(f.Bridge) {
		if err := ipQuiet("link", "del", f.Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	if subnet != "" {
		_ = ipQuiet("route", "del", "unreachable", subnet, "metric", guardMetric)
	}
	return errors.Join(errs...)
}

// Sweep removes what fleets of processes that are gone left behind: the processes in their
// namespaces, the namespaces, their links and bridges, and guard routes without a bridge.
func Sweep() error {
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	nss, err := namespaces()
	if err != nil {
		return err
	}
	for _, ns := range nss {
		if leftover(ns) {
			if err := removeNamespace(ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	links, err := linkNames()
	if err != nil {
		return err
	}
	for _, l := range links {
		if leftover(l) {
			if err := ipQuiet("link", "del", l); err != nil && linkExists(l) {
				errs = append(errs, err)
			}
		}
	}
	// A guard route whose subnet no bridge carries any more is a leftover (a Build holds the
	// lock from its guard to its bridge's address, so it never shows here half made).
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "type", "unreachable").Output()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("netfleet: ip route show: %w", err))...)
	}
	used, err := usedSubnets()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "unreachable" || !strings.HasPrefix(fields[1], subnetBase) ||
			!strings.Contains(line, "metric "+guardMetric) || used[fields[1]+"@bridge"] {
			continue
		}
		_ = ipQuiet("route", "del", "unreachable", fields[1], "metric", guardMetric)
	}
	return errors.Join(errs...)
}

// leftover says whether name was made by a fleet whose process is gone.
func leftover(name string) bool {
	if !strings.HasPrefix(name, Prefix) {
		return false
	}
	digits := strings.TrimPrefix(name, Prefix)
	n := 0
	for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	if n == 0 || n == len(digits) || digits[n] < 'a' || digits[n] > 'z' {
		return false // not a name of this package's pattern
	}
	pid, err := strconv.Atoi(digits[:n])
	if err != nil || pid == os.Getpid() {
		return false
	}
	return !alive(pid)
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeNamespace kills every process in namespace ns (until none is left, up to 10s) and
// deletes it. A namespace that does not exist is no error.
func removeNamespace(ns string) error {
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids, err := nsPids(ns)
		if err != nil || len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netfleet: processes %v still run in namespace %s after 10s of SIGKILL", pids, ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := ipQuiet("netns", "del", ns); err != nil {
		if _, serr := os.Stat(filepath.Join("/run/netns", ns)); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return nil
}

func nsPids(ns string) ([]int, error) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil, fmt.Errorf("netfleet: ip netns pids %s: %w", ns, err)
	}
	// Never a process of this machine's own network: a namespace file that no longer names a
	// namespace of its own (half made, or its mount lost) must not make a sweep kill the
	// tests, LBs and services running beside it.
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("netfleet: own network namespace: %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if ns, err := os.Readlink("/proc/" + f + "/ns/net"); err != nil || ns == own {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

func namespaces() ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("netfleet: ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

func linkNames() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("netfleet: list links: %w", err)
	}
	names := make([]string, len(ifs))
	for i, ifc := range ifs {
		names[i] = ifc.Name
	}
	return names, nil
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// usedSubnets are the /24s of 10.231.0.0/16 that a route of the root namespace names (a
// fleet's bridge, its guard, or anything else of this machine), and "S@bridge" for each that a
// link carries as an address.
func usedSubnets() (map[string]bool, error) {
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("netfleet: ip route show: %w", err)
	}
	used := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if _, n, err := net.ParseCIDR(f); err == nil && strings.HasPrefix(n.IP.String(), subnetBase) {
				used[subnet24(n.IP)] = true
			} else if ip := net.ParseIP(f); ip != nil && strings.HasPrefix(ip.String(), subnetBase) {
				used[subnet24(ip)] = true
			}
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("netfleet: list links: %w", err)
	}
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && strings.HasPrefix(ipn.IP.String(), subnetBase) {
				used[subnet24(ipn.IP)] = true
				used[subnet24(ipn.IP)+"@bridge"] = true
			}
		}
	}
	return used, nil
}

func subnet24(ip net.IP) string {
	v4 := ip.To4()
	if v4 == nil {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d.0/24", v4[0], v4[1], v4[2])
}

// lock takes the lock between fleets of all processes.
func lock() (func(), error) {
	fl := flock.New(lockFile)
	if err := fl.Lock(); err != nil {
		return nil, fmt.Errorf("netfleet: lock %s: %w", lockFile, err)
	}
	return func() { _ = fl.Unlock() }, nil
}

// ipBatch runs ip commands, in namespace ns when not "", failing on the first.
func ipBatch(ns string, cmds []string) error {
	args := []string{"-batch", "-"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		where := "the root namespace"
		if ns != "" {
			where = "namespace " + ns
		}
		return fmt.Errorf("netfleet: ip in %s: %w: %s (commands: %s)", where, err, bytes.TrimSpace(out), strings.Join(cmds, "; "))
	}
	return nil
}

func ipQuiet(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("netfleet: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// tail is the last n bytes of the file at path.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// SSHDLog is the tail (up to n bytes) of host h's sshd log.
func (h *Host) SSHDLog(n int) string { return tail(h.log, n) }
