package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// netns is a network namespace whose system resolver asks 127.0.0.1 (its own loopback): `ip
// netns exec` bind-mounts /etc/netns/NAME/resolv.conf over /etc/resolv.conf. Needs root.
func netns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace (ip netns add) and /etc/netns/NAME/resolv.conf; " +
			"run as root (CI does) to see the system resolver use the zone server")
	}
	for _, tool := range []string{"ip", "getent"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian packages iproute2 and libc-bin): %v", tool, err)
		}
	}
	name := fmt.Sprintf("z502dns-%d-%d", os.Getpid(), rand.IntN(1e6))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", name, err, out)
	}
	etc := filepath.Join("/etc/netns", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", name, err, out)
		}
		os.RemoveAll(etc)
	})
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up in %s: %v\n%s", name, err, out)
	}
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	resolv := "nameserver 127.0.0.1\noptions timeout:1 attempts:2\n"
	if err := os.WriteFile(filepath.Join(etc, "resolv.conf"), []byte(resolv), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/etc/nsswitch.conf"); err == nil {
		// Names from DNS only, so nothing in the host's /etc/hosts can answer for the zone.
		if err := os.WriteFile(filepath.Join(etc, "nsswitch.conf"), []byte("hosts: dns\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// resolve is what the system resolver in ns answers for host (getent ahosts: glibc, A and AAAA).
func resolve(ns, host string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "getent", "ahosts", host).CombinedOutput()
	return string(out), err
}

// awaitResolution polls the system resolver in ns until its answer for host holds every
// address in want and none in gone.
func awaitResolution(t *testing.T, ns, host string, want, gone []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := resolve(ns, host)
		ok := err == nil
		for _, a := range want {
			ok = ok && strings.Contains(out, a+" ")
		}
		for _, a := range gone {
			ok = ok && !strings.Contains(out, a+" ")
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("getent ahosts %s in %s: want %v and not %v within 20s; last answer (%v):\n%s", host, ns, want, gone, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSystemResolverSeesTheZoneFileAndARemoval(t *testing.T) {
	ns := netns(t)
	bin := buildZero502(t)
	zone := filepath.Join(t.TempDir(), "edge.zone")
	const host = "edge.example.test"
	for _, a := range []string{"192.0.2.1", "192.0.2.2"} {
		if out, code := runCLI(t, "dns", "add", "--zone", zone, "--name", host, "--origin", "example.test", "--ttl", "5s", a); code != 0 {
			t.Fatalf("dns add %s: exit %d\n%s", a, code, out)
		}
	}
	// The real command, in the namespace, on the resolver's address.
	serve := exec.Command("ip", "netns", "exec", ns, bin, "dns", "serve", "--zone", zone, "--listen", "127.0.0.1:53")
	var logs strings.Builder
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			_ = serve.Process.Kill()
		}
	})

	awaitResolution(t, ns, host, []string{"192.0.2.1", "192.0.2.2"}, nil)
	if out, _ := resolve(ns, "missing.example.test"); strings.TrimSpace(out) != "" {
		t.Fatalf("a name the zone does not hold resolved:\n%s", out)
	}

	// The rollout takes an edge out: the next lookup no longer sees it.
	if out, code := runCLI(t, "dns", "remove", "--zone", zone, "--name", host, "--ttl", "5s", "192.0.2.1"); code != 0 {
		t.Fatalf("dns remove: exit %d\n%s", code, out)
	}
	awaitResolution(t, ns, host, []string{"192.0.2.2"}, []string{"192.0.2.1"})

	// The last address stays: remove refuses, and the resolver still answers.
	if out, code := runCLI(t, "dns", "remove", "--zone", zone, "--name", host, "--ttl", "5s", "192.0.2.2"); code != 1 ||
		!strings.Contains(out, "last address") {
		t.Fatalf("dns remove of the last address: exit %d, want 1 and a refusal\n%s", code, out)
	}
	awaitResolution(t, ns, host, []string{"192.0.2.2"}, nil)

	// The file holds what the resolver answered.
	set, err := zonefile.NewSet(zone, host, zonefile.Options{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := set.List(context.Background()); err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("192.0.2.2") {
		t.Fatalf("zone file holds %v, %v", got, err)
	}

	// SIGTERM stops it cleanly.
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("dns serve after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("dns serve did not stop within 20s of SIGTERM\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"dns stopping"`) {
		t.Fatalf("no stop line in the logs:\n%s", logs.String())
	}
}
