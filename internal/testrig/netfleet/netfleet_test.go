//go:build linux

package netfleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, testmain.Options{})) }

// listenerEnv turns TestListenerProcess into a TCP server on the address it names.
const listenerEnv = "ZERO502_NETFLEET_LISTEN"

// The listener helper: this test binary run inside a host's namespace, answering "ok" on every
// connection to the address in ZERO502_NETFLEET_LISTEN.
func TestListenerProcess(t *testing.T) {
	addr := os.Getenv(listenerEnv)
	if addr == "" {
		t.Skip("a helper process of TestAFleetIsHostsOnARealNetwork, run by it inside a host's namespace")
	}
	ln, err := net.Listen("tcp", addr)
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
		_, _ = c.Write([]byte("ok\n"))
		c.Close()
	}
}

// listen runs the listener helper in host h on port, until the test ends.
func listen(t *testing.T, h *Host, port int) string {
	t.Helper()
	addr := net.JoinHostPort(h.Address, fmt.Sprint(port))
	cmd := h.Exec(context.Background(), os.Args[0], "-test.run=^TestListenerProcess$")
	cmd.Env = append(os.Environ(), listenerEnv+"="+addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testmain.Track(t, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("listener in %s on %s: %q", h.Name, addr, line)
	}
	return addr
}

// dial says whether addr answers "ok" within 700ms, from this (the root) namespace.
func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 700*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(700 * time.Millisecond))
	line, err := bufio.NewReader(c).ReadString('\n')
	if line != "ok\n" {
		return fmt.Errorf("no answer: %q %v", line, err)
	}
	return nil
}

// Each host is a namespace of its own, with only its own address, reachable from this machine
// at that address and over ssh there; a cut link reaches nothing and comes back when restored; a
// blocked port is dropped while ssh to the same host still works; Close leaves no namespace,
// link, process or route behind.
func TestAFleetIsHostsOnARealNetwork(t *testing.T) {
	f := ForTest(t, 3)
	if !strings.HasPrefix(f.Subnet, "10.231.") || f.Gateway != strings.TrimSuffix(f.Subnet, "0/24")+"1" {
		t.Fatalf("subnet %s, gateway %s: want a /24 of 10.231.0.0/16 with the gateway at .1", f.Subnet, f.Gateway)
	}
	ctx := context.Background()
	for _, h := range f.Hosts {
		out, err := h.Exec(ctx, "ip", "-4", "-o", "addr", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("ip addr in %s: %v\n%s", h.Name, err, out)
		}
		if !strings.Contains(string(out), " "+h.Address+"/24 ") || !strings.Contains(string(out), " 127.0.0.1/8 ") ||
			strings.Count(string(out), "inet ") != 2 {
			t.Errorf("%s's addresses:\n%s\nwant 127.0.0.1 and %s only", h.Name, out, h.Address)
		}
		// Over ssh, the session runs inside the host: it sees the host's address, not this machine's.
		out, err = f.SSHCommand(ctx, h, "ip -4 -o addr show dev eth0").CombinedOutput()
		if err != nil || !strings.Contains(string(out), h.Address+"/24") {
			t.Errorf("ssh %s: %v\n%s; want a session inside the host (its eth0 at %s)", h.SSH, err, out, h.Address)
		}
	}
	a, b := listen(t, f.Hosts[0], 8000), listen(t, f.Hosts[1], 8000) // one port, two hosts: two stacks
	for _, addr := range []string{a, b} {
		if err := dial(addr); err != nil {
			t.Fatalf("dial %s from the root namespace: %v", addr, err)
		}
	}

	if err := f.Hosts[0].Cut(); err != nil {
		t.Fatal(err)
	}
	if err := dial(a); err == nil {
		t.Fatalf("dial %s answered with its link cut", a)
	}
	if err := dial(b); err != nil {
		t.Fatalf("dial %s (the other host) with host-01's link cut: %v", b, err)
	}
	if err := f.Hosts[0].Restore(); err != nil {
		t.Fatal(err)
	}
	poll.UntilNil(t, 10*time.Second, "host-01 answers again once its link is restored", func() error { return dial(a) })

	if err := f.Hosts[1].Block(8000, 8001); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if err := dial(b); err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("dial %s with its port blocked: %v; want a timeout (dropped, not refused)", b, err)
	}
	if out, err := f.SSHCommand(ctx, f.Hosts[1], "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh to host-02 with only its service ports blocked: %v\n%s", err, out)
	}
	// Inside the host, its own loopback still reaches the port: only what comes over the link is dropped.
	inside := f.Hosts[1].Exec(ctx, os.Args[0], "-test.run=^TestDialProcess$")
	inside.Env = append(os.Environ(), dialEnv+"="+b)
	if out, err := inside.CombinedOutput(); err != nil {
		t.Fatalf("dial from inside host-02 with its port blocked from outside: %v\n%s", err, out)
	}
	if err := f.Hosts[1].Unblock(); err != nil {
		t.Fatal(err)
	}
	if err := dial(b); err != nil {
		t.Fatalf("dial %s once unblocked: %v", b, err)
	}

	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	requireGone(t, f)
}

// dialEnv names the address TestDialProcess dials.
const dialEnv = "ZERO502_NETFLEET_DIAL"

// The dial helper: this test binary run inside a host, dialling ZERO502_NETFLEET_DIAL.
func TestDialProcess(t *testing.T) {
	addr := os.Getenv(dialEnv)
	if addr == "" {
		t.Skip("a helper process of TestAFleetIsHostsOnARealNetwork")
	}
	if err := dial(addr); err != nil {
		t.Fatal(err)
	}
}

// requireGone fails t if anything of fleet f is left: a namespace, a link, the guard route.
func requireGone(t *testing.T, f *Fleet) {
	t.Helper()
	nss, err := namespaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		if strings.HasPrefix(ns, f.ID) {
			t.Errorf("namespace %s left after Close", ns)
		}
	}
	links, err := linkNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l, f.ID) {
			t.Errorf("link %s left after Close", l)
		}
	}
	out, _ := exec.Command("ip", "-4", "route", "show", f.Subnet).CombinedOutput()
	if strings.TrimSpace(string(out)) != "" {
		t.Errorf("routes of %s left after Close:\n%s", f.Subnet, out)
	}
}

// What a process that is gone left (a namespace with a process in it, a link, a guard route) is
// removed by the next Sweep; what a live process made is not touched.
func TestSweepRemovesOnlyTheLeftoversOfProcessesThatAreGone(t *testing.T) {
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	testmain.Track(t, func() { _ = live.Process.Kill(); _ = live.Wait() })
	deadNS := fmt.Sprintf("%s%da-host-01", Prefix, gone.Process.Pid)
	liveNS := fmt.Sprintf("%s%da-host-01", Prefix, live.Process.Pid)
	deadLink := fmt.Sprintf("%s%dabr", Prefix, gone.Process.Pid)
	for _, ns := range []string{deadNS, liveNS} {
		if err := ipQuiet("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		testmain.Track(t, func() { _ = removeNamespace(ns) })
	}
	if err := ipQuiet("link", "add", deadLink, "type", "bridge"); err != nil {
		t.Fatal(err)
	}
	testmain.Track(t, func() { _ = ipQuiet("link", "del", deadLink) })
	// A process of the dead run, still in its namespace (a service it had started there).
	orphan := exec.Command("ip", "netns", "exec", deadNS, "sleep", "60")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() { _ = orphan.Wait(); close(reaped) }()
	testmain.Track(t, func() { _ = orphan.Process.Kill(); <-reaped })
	poll.UntilNil(t, 5*time.Second, "the orphan runs in the dead run's namespace", func() error {
		pids, err := nsPids(deadNS)
		if err == nil && len(pids) == 0 {
			err = errors.New("no process yet")
		}
		return err
	})

	if err := Sweep(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reaped:
	case <-time.After(5 * time.Second):
		t.Errorf("the process in %s still runs after Sweep", deadNS)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", deadNS)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s of a process that is gone is still there after Sweep", deadNS)
	}
	if linkExists(deadLink) {
		t.Errorf("bridge %s of a process that is gone is still there after Sweep", deadLink)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", liveNS)); err != nil {
		t.Errorf("namespace %s of a live process was removed by Sweep: %v", liveNS, err)
	}
}
