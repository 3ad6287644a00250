package compose

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/zero502/zero502/infra/config"
)

// Write is im as a zero502 config a person reads and edits: the notes as comments first, then
// the balancer (the in-house LB in front of the first service with a port), the rollout and
// drain numbers the file set, the services, and one host to replace with the fleet's. from
// names the Compose file in the header.
func Write(im *Import, from string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# zero502 config imported from %s (zero502 init --from-compose).\n", comment(from))
	b.WriteString("# Set the hosts (and ssh) of your fleet and the balancer's addresses, then check it:\n")
	b.WriteString("#   zero502 invariants --config THIS_FILE\n")
	if len(im.Notes) > 0 {
		b.WriteString("#\n# What zero502 does not honour as Compose would, key by key, and what to do:\n")
		for _, n := range im.Notes {
			b.WriteString("#   " + comment(n.String()) + "\n")
		}
	}
	doc := document{Rollout: rollout{Runtime: config.RuntimeDocker, Strategy: im.Strategy, Batch: im.Batch},
		Hosts: []host{{Name: "host-1", Address: "127.0.0.1"}}}
	for _, s := range im.Services {
		out := service{Name: s.Name, Image: s.Image, Command: s.Command, Port: s.Port, Ports: s.Ports, Drain: s.Drain,
			Env: s.Env, Secrets: s.Secrets, User: s.User, StopSignal: s.StopSignal}
		if s.Health.Path != "" {
			out.Health = &health{Path: s.Health.Path}
			if s.Health.Timeout != 0 {
				out.Health.Timeout = s.Health.Timeout.String()
			}
		}
		doc.Services = append(doc.Services, out)
		if s.Port > 0 && doc.Balancer.Service == "" {
			doc.Balancer = balancer{Kind: config.BalancerInHouse, Listen: "127.0.0.1:8080", Admin: "127.0.0.1:8081", Service: s.Name}
		}
	}
	if im.StopGrace > 0 {
		d := config.Defaults().Drain
		if im.StopGrace > d.Window+d.Shutdown {
			doc.Drain = &drain{StopGrace: im.StopGrace.String()}
		} else {
			fmt.Fprintf(&b, "#   stop_grace_period %s: kept drain.stop_grace %s, which must exceed drain.window %s + drain.shutdown %s (invariant I2)\n",
				im.StopGrace, d.StopGrace, d.Window, d.Shutdown)
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("write the imported config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// document is the config as written: only the keys the import sets, in the reference's order.
type document struct {
	Balancer balancer  `yaml:"balancer,omitempty"`
	Drain    *drain    `yaml:"drain,omitempty"`
	Rollout  rollout   `yaml:"rollout"`
	Services []service `yaml:"services"`
	Hosts    []host    `yaml:"hosts"`
}

type balancer struct {
	Kind    string `yaml:"kind,omitempty"`
	Listen  string `yaml:"listen,omitempty"`
	Admin   string `yaml:"admin,omitempty"`
	Service string `yaml:"service,omitempty"`
}

type drain struct {
	StopGrace string `yaml:"stop_grace,omitempty"`
}

type rollout struct {
	Runtime  string `yaml:"runtime"`
	Strategy string `yaml:"strategy,omitempty"`
	Batch    int    `yaml:"batch,omitempty"`
}

type service struct {
	Name       string            `yaml:"name"`
	Image      string            `yaml:"image,omitempty"`
	Command    []string          `yaml:"command,omitempty,flow"`
	Port       int               `yaml:"port,omitempty"`
	Ports      []int             `yaml:"ports,omitempty,flow"`
	Health     *health           `yaml:"health,omitempty"`
	Drain      string            `yaml:"drain,omitempty"`
	Env        map[string]string `yaml:"env,omitempty"`
	Secrets    []string          `yaml:"secrets,omitempty,flow"`
	User       string            `yaml:"user,omitempty"`
	StopSignal string            `yaml:"stop_signal,omitempty"`
}

type health struct {
	Path    string `yaml:"path"`
	Timeout string `yaml:"timeout,omitempty"`
}

type host struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address"`
}

// comment is s as the text of one YAML comment line: each control character and each character
// YAML ends a line at (\r, \n, U+0085, U+2028, U+2029) becomes a space. Note.String has escaped
// them already; this holds whatever a note, or the Compose file's name, is made of.
func comment(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' ' // unicode.IsControl holds U+0085
		}
		return r
	}, s)
}
