package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/dnsset/route53set"
	"github.com/zero502/zero502/infra/dnsset/zonefile"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newDNSCmd serves and edits the edges' A set in a zone file (package infra/dnsset/zonefile).
func newDNSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "The edges' DNS A set in a zone file: serve it authoritatively (serve), change it (add, remove, list)",
		Long: `Clients find the edges through one DNS name whose A records are the edges in rotation. Rolling
an edge takes its address out of that set, waits the TTL, drains the edge, and puts the new one
back. For local use and tests the set lives in a standard RFC 1035 zone file:

  zero502 dns serve    an authoritative DNS server (UDP and TCP) answering from the file
  zero502 dns add      put an address in the set (creates the file if there is none)
  zero502 dns remove   take an address out (never the last one)
  zero502 dns list     the addresses in the set

A change is written atomically under a lock (FILE.lock) and is answered from the next query on.
In production the same set is kept in Route 53: add, remove and list take --route53-zone ID
instead of --zone (one multivalue answer record per address, health checks off), and a change
returns once Route 53 reports it INSYNC.`,
	}
	cmd.AddCommand(newDNSServeCmd(), newDNSEditCmd("add"), newDNSEditCmd("remove"), newDNSListCmd())
	return cmd
}

func newDNSServeCmd() *cobra.Command {
	var zone, listen string
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "serve --zone FILE --listen HOST:PORT",
		Short: "Answer DNS queries for the zone in FILE, authoritatively, on UDP and TCP",
		Long: `Serve the zone in FILE on --listen, UDP and TCP on the same port. Answers carry the AA bit and
the file's TTLs; a name in the zone without the asked type gets NODATA, a missing name NXDOMAIN
(both with the SOA), a name outside the zone REFUSED: it is not a resolver. The file is checked
on every query and reloaded when it changed; a file that does not parse is logged and the last
good zone keeps being served. SIGTERM or Ctrl-C stops it cleanly. Logs are JSON on stderr; the
first line says the address it listens on (useful with port 0).`,
		Example: `  zero502 dns serve --zone edge.zone --listen 127.0.0.1:5353
  dig @127.0.0.1 -p 5353 edge.example.test A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "zone", "listen"); err != nil {
				return err
			}
			log, err := logs.logger(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			l, err := zonefile.NewServer(zone, log).Listen(listen)
			if err != nil {
				return exitCode(1, err)
			}
			log.Info("dns serving", "listen", l.Addr, "zone", zone)
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			<-ctx.Done()
			log.Info("dns stopping", "listen", l.Addr)
			done, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := l.Shutdown(done); err != nil {
				return exitCode(1, fmt.Errorf("dns serve: stopping: %w", err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&zone, "zone", "", "zone file (RFC 1035 master file with one SOA) (required)")
	cmd.Flags().StringVar(&listen, "listen", "", "UDP and TCP address, e.g. 127.0.0.1:5353 (port 0 picks one) (required)")
	logs = addLogFlags(cmd, false)
	return cmd
}

// dnsSetFlags are the flags that name one A set: in a zone file (--zone) or in a Route 53
// hosted zone (--route53-zone).
type dnsSetFlags struct {
	zone, name, origin           string
	route53Zone, route53Endpoint string
	ttl                          time.Duration
}

// aSet is what the dns commands need of an A set provider.
type aSet interface {
	Name() string
	TTL() time.Duration
	List(context.Context) ([]netip.Addr, error)
	// Records is List with the TTL the records carry, which Add never lowers to TTL.
	Records(context.Context) ([]netip.Addr, time.Duration, error)
	Add(context.Context, netip.Addr) error
	Remove(context.Context, netip.Addr) error
}

func addDNSSetFlags(cmd *cobra.Command) *dnsSetFlags {
	f := &dnsSetFlags{}
	cmd.Flags().StringVar(&f.zone, "zone", "", "zone file (this or --route53-zone is required)")
	cmd.Flags().StringVar(&f.route53Zone, "route53-zone", "", "Route 53 hosted zone ID instead of a zone file "+
		"(credentials from the AWS SDK's default chain); changes return once INSYNC")
	cmd.Flags().StringVar(&f.route53Endpoint, "route53-endpoint", "", "Route 53 API endpoint (default: AWS's)")
	_ = cmd.Flags().MarkHidden("route53-endpoint") // for tests against the Route 53 double
	cmd.Flags().StringVar(&f.name, "name", "", "the A set's record name, e.g. edge.example.test (required)")
	cmd.Flags().DurationVar(&f.ttl, "ttl", dnsset.DefaultTTL, "TTL of the records add writes; remove refuses a record cached longer")
	cmd.Flags().StringVar(&f.origin, "origin", "", "apex of a zone file add creates (default: the name itself)")
	return f
}

func (f *dnsSetFlags) set(cmd *cobra.Command) (aSet, error) {
	if err := requireFlags(cmd, "name"); err != nil {
		return nil, err
	}
	var s aSet
	var err error
	switch {
	case f.zone != "" && f.route53Zone != "":
		return nil, exitCode(2, fmt.Errorf("%s: --zone %s and --route53-zone %s both given: the set lives in one place; "+
			"give one of them", cmd.CommandPath(), f.zone, f.route53Zone))
	case f.route53Zone != "":
		client, cerr := route53set.NewClient(cmd.Context(), route53set.ClientOptions{Endpoint: f.route53Endpoint})
		if cerr != nil {
			return nil, exitCode(1, fmt.Errorf("%s: %w", cmd.CommandPath(), cerr))
		}
		s, err = route53set.New(client, f.route53Zone, f.name, route53set.Options{TTL: f.ttl})
	case f.zone != "":
		s, err = zonefile.NewSet(f.zone, f.name, zonefile.Options{TTL: f.ttl, Origin: f.origin})
	default:
		return nil, exitCode(2, fmt.Errorf("%s: --zone is required (or --route53-zone for a Route 53 hosted zone; see --help)",
			cmd.CommandPath()))
	}
	if err != nil {
		return nil, exitCode(2, fmt.Errorf("%s: %w", cmd.CommandPath(), err))
	}
	return s, nil
}

func newDNSEditCmd(verb string) *cobra.Command {
	var f *dnsSetFlags
	short := map[string]string{
		"add":    "Put ADDR in the A set (a no-op when it is there); creates the zone file if there is none",
		"remove": "Take ADDR out of the A set (a no-op when it is not there); never the last address",
	}[verb]
	cmd := &cobra.Command{
		Use:   verb + " (--zone FILE | --route53-zone ID) --name NAME ADDR",
		Short: short,
		Example: fmt.Sprintf("  zero502 dns %[1]s --zone edge.zone --name edge.example.test 192.0.2.10\n"+
			"  zero502 dns %[1]s --route53-zone Z0123456789ABCDEFGHIJ --name edge.example.com --ttl 30s 203.0.113.10", verb),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.set(cmd)
			if err != nil {
				return err
			}
			addr, err := dnsset.Addr("ADDR", args[0])
			if err != nil {
				return exitCode(2, fmt.Errorf("%s: %w", cmd.CommandPath(), err))
			}
			change := s.Add
			if verb == "remove" {
				change = s.Remove
			}
			if err := change(cmd.Context(), addr); err != nil {
				return exitCode(1, fmt.Errorf("%s: %w", cmd.CommandPath(), err))
			}
			addrs, ttl, err := s.Records(cmd.Context())
			if err != nil {
				return exitCode(1, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %d addresses, %s: %v\n", s.Name(), verb, len(addrs), carriedTTL(ttl, s.TTL()), addrs)
			return nil
		},
	}
	f = addDNSSetFlags(cmd)
	return cmd
}

// carriedTTL says the TTL the set's records carry (have) after a change made with --ttl want,
// in seconds as DNS counts them, and why when it is longer: a change never lowers a TTL.
func carriedTTL(have, want time.Duration) string {
	s := fmt.Sprintf("TTL %ds", have/time.Second)
	if have > want {
		s += fmt.Sprintf(" (longer than --ttl %ds: zero502 never lowers a TTL, since resolvers may keep "+
			"the answers already handed out for %ds)", want/time.Second, have/time.Second)
	}
	return s
}

func newDNSListCmd() *cobra.Command {
	var f *dnsSetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list (--zone FILE | --route53-zone ID) --name NAME",
		Short:   "Print the A set's addresses, one a line",
		Example: "  zero502 dns list --zone edge.zone --name edge.example.test --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.set(cmd)
			if err != nil {
				return err
			}
			addrs, err := s.List(cmd.Context())
			if err != nil {
				return exitCode(1, fmt.Errorf("%s: %w", cmd.CommandPath(), err))
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(struct {
					Name      string   `json:"name"`
					Addresses []string `json:"addresses"`
				}{s.Name(), addrStrings(addrs)})
			}
			for _, a := range addrs {
				fmt.Fprintln(out, a)
			}
			return nil
		},
	}
	f = addDNSSetFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {name, addresses} as JSON")
	return cmd
}

func addrStrings[T fmt.Stringer](addrs []T) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}
