//go:build linux

// Command netfleet builds a fleet of hosts on a real network (package netfleet) for scripts
// such as bench/fleet.sh, and removes it again.
//
//	netfleet up -hosts 50 -dir DIR   build it, write DIR/fleet.json, hold it until SIGINT or
//	                                 SIGTERM (or the parent's death), then remove it
//	netfleet sweep                   remove what fleets of processes that are gone left behind
//
// DIR/fleet.json is {"gateway", "subnet", "ssh_opts", "hosts": [{"name", "address", "ssh",
// "namespace"}]}; ssh_opts is the value for ZERO502_SSH_OPTS. It is written once every host's
// sshd accepts a login. Needs root.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/internal/testrig/netfleet"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "netfleet:", err)
		os.Exit(1)
	}
}

type hostJSON struct {
	Name      string `json:"name"`
	Address   string `json:"address"`
	SSH       string `json:"ssh"`
	Namespace string `json:"namespace"`
}

type fleetJSON struct {
	Gateway string     `json:"gateway"`
	Subnet  string     `json:"subnet"`
	SSHOpts string     `json:"ssh_opts"`
	Hosts   []hostJSON `json:"hosts"`
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: netfleet up -hosts N -dir DIR | netfleet sweep")
	}
	switch args[0] {
	case "sweep":
		return netfleet.Sweep()
	case "up":
	default:
		return fmt.Errorf("%q: give up or sweep", args[0])
	}
	fs := flag.NewFlagSet("netfleet up", flag.ContinueOnError)
	hosts := fs.Int("hosts", 8, "how many hosts")
	dir := fs.String("dir", "", "directory for the fleet's keys, sshd logs and fleet.json (required, created)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-dir is required: where fleet.json and the fleet's keys go")
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	// Should the script that started us die without stopping us, we stop (and clean up) too.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if os.Getppid() == 1 {
		return errors.New("started without a parent to hold the fleet for")
	}
	f, err := netfleet.Build(netfleet.Options{Hosts: *hosts, Dir: *dir})
	if err != nil {
		return err
	}
	defer f.Close()
	out := fleetJSON{Gateway: f.Gateway, Subnet: f.Subnet, SSHOpts: strings.Join(f.SSHOptions, " ")}
	for _, h := range f.Hosts {
		out.Hosts = append(out.Hosts, hostJSON{Name: h.Name, Address: h.Address, SSH: h.SSH, Namespace: h.Namespace})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(*dir, "fleet.json")
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	fmt.Printf("netfleet: %d hosts on %s (gateway %s): %s; SIGTERM removes them\n", len(f.Hosts), f.Subnet, f.Gateway, path)
	<-sig
	return f.Close()
}
