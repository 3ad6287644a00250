package watchdog

import (
	"fmt"
	"os"
	"strings"

	"github.com/zero502/zero502/infra/config"
)

// Hosts picks the hosts this machine watches: the one named name; else the host named like this
// machine (os.Hostname, also without its domain); else, in a config whose hosts are all reached
// without ssh (the local demo's hosts share one machine), every host. A config with a host over
// ssh says which machine is which only by name: there, --host is required.
func Hosts(cfg *config.Config, name string) ([]config.Host, error) {
	names := make([]string, 0, len(cfg.Hosts))
	for _, h := range cfg.Hosts {
		names = append(names, h.Name)
	}
	if len(cfg.Hosts) == 0 {
		return nil, fmt.Errorf("the config has no hosts; add hosts: [{name: …}]")
	}
	if name != "" {
		h, ok := cfg.Host(name)
		if !ok {
			return nil, fmt.Errorf("--host %q: not a host of the config (hosts: %s)", name, strings.Join(names, ", "))
		}
		return []config.Host{h}, nil
	}
	if me, err := os.Hostname(); err == nil {
		short, _, _ := strings.Cut(me, ".")
		for _, cand := range []string{me, short} {
			if h, ok := cfg.Host(cand); ok {
				return []config.Host{h}, nil
			}
		}
	}
	for _, h := range cfg.Hosts {
		if h.SSH != "" {
			return nil, fmt.Errorf("no host of the config is named like this machine, and host %s is reached over ssh, so the config "+
				"does not say which host this is: pass --host NAME (hosts: %s)", h.Name, strings.Join(names, ", "))
		}
	}
	return cfg.Hosts, nil
}

// ForHosts returns the watchdog of each of hosts, in order, all with opts.
func ForHosts(cfg *config.Config, hosts []config.Host, opts Options) ([]*Watchdog, error) {
	ws := make([]*Watchdog, 0, len(hosts))
	for _, h := range hosts {
		w, err := New(cfg, h, opts)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}
