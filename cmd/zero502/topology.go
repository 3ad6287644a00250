package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/topology"
)

func newTopologyCmd() *cobra.Command {
	var path, ldns, ecs string
	var rr uint64
	var example, withoutRegion, asJSON bool
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Explain a GTM (BIG-IP DNS) topology decision: the longest match order, the scores, what is shadowed",
		Long: `Reads a set of GTM topology records and answers one query. The input (--file, "-" for
stdin) is either what tmsh prints or this tool's YAML; the first word tells them apart.

A tmsh paste is the output of tmsh list gtm topology (one-line or multi-line form), with any
gtm region, gtm global-settings load-balancing (topology-longest-match), gtm wideip, gtm pool
and gtm server stanzas, plus query lines that make it one self-contained case:
  source ip=10.1.2.7        (or declared: source country=PT continent=EU isp="..." region=NAME)
  candidates POOL1 POOL2    (optional; else the wide IP's pools, or the record destinations)
  down vs1 s2:vs3           (optional; pool members marked down: SERVER:VS when two
                            servers have a virtual server of that name)
Without a source line (and no --ldns) the records are shown in walk order only. With gtm
wideip and gtm pool stanzas both levels are walked: the wide IP chooses a pool, the pool a
member, and the answer says where the query ends (a member, the alternate or fallback method,
the next pool, or the local BIND). --ldns and --ecs override the paste's source line.

The YAML (records, regions, a geolocation table, the pools) needs --ldns.

Either way the records are sorted the way Longest Match does (negation group, then source,
then destination, then score), walked, and each candidate takes the score of the FIRST record
that matches it; every later record for that candidate is shadowed; the highest score wins
(equal scores round robin, --rr).

Longest Match orders, it does not choose: a wildcard worth 100 beats a /32 worth 5. Cases the
sources (the BIG-IP GTM Load Balancing manual, F5 K10721) do not decide are listed as warnings,
not guessed silently; so are pools whose fallback is not none when topology runs at both levels.

--example runs the worked example (a /24 gives POOL1 30, a region around it gives POOL2 20, a
wildcard gives POOL2 40: POOL1 wins 30 to 20, the 40 is shadowed); --without-region deletes the
region record and the answer flips to POOL2.

Exit status: 0 the decision was explained (a winner, or no topology match), 2 the input or the
flags are invalid (nothing was computed); the error shows the expected shape.`,
		Example: `  zero502 topology --example
  zero502 topology --example --without-region
  tmsh list gtm topology | zero502 topology --file -
  zero502 topology --file paste.txt --json      # tmsh text with a "source ip=..." line
  zero502 topology --file gtm-topology.yaml --ldns 10.1.2.7
  zero502 topology --file gtm-topology.yaml --ldns 10.1.2.7 --ecs 10.9.0.0/24 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var text string // --file, read once ("-" is stdin: it cannot be read twice)
			if path != "" && !example && !withoutRegion {
				var err error
				if text, err = readTopologyFile(cmd, path); err != nil {
					return exitCode(2, err)
				}
				if strings.TrimSpace(text) == "" || topology.LooksLikeTMSH(text) {
					return runTopologyPaste(cmd, text, ldns, ecs, rr, asJSON)
				}
			}
			set, q, err := topologyInput(path, text, ldns, ecs, example, withoutRegion)
			if err != nil {
				return exitCode(2, err)
			}
			res := set.Score(q, rr)
			if asJSON {
				return writeTopologyJSON(cmd, res)
			}
			return res.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&path, "file", "f", "", `tmsh paste or YAML topology set; "-" reads stdin`)
	cmd.Flags().StringVar(&ldns, "ldns", "", "the LDNS address the query comes from (--example: 10.1.2.7; overrides a paste's source ip)")
	cmd.Flags().StringVar(&ecs, "ecs", "", "the query's EDNS0 Client Subnet (CIDR), classified when prefer_edns0_client_subnet is on")
	cmd.Flags().Uint64Var(&rr, "rr", 0, "round-robin counter for equal top scores (the winner is the rr-th of the tied, mod their number)")
	cmd.Flags().BoolVar(&example, "example", false, "run the built-in worked example instead of --file")
	cmd.Flags().BoolVar(&withoutRegion, "without-region", false, "with --example: delete the region record (the answer flips)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decision as JSON")
	return cmd
}

func writeTopologyJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readTopologyFile reads --file, "-" being stdin, without the byte order mark some editors start
// a UTF-8 file with (Notepad): it is no part of the first word, which tells a tmsh paste from YAML.
func readTopologyFile(cmd *cobra.Command, path string) (string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(cmd.InOrStdin())
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("--file %s: %w", path, err)
	}
	return strings.TrimPrefix(string(data), "\ufeff"), nil
}

// runTopologyPaste decides a tmsh paste; --ldns and --ecs override its source line.
func runTopologyPaste(cmd *cobra.Command, text, ldns, ecs string, rr uint64, asJSON bool) error {
	p, err := topology.ParseTMSH(strings.NewReader(text))
	if err != nil {
		return exitCode(2, err)
	}
	if ldns != "" || ecs != "" {
		if p.Query == nil {
			p.Query = &topology.Query{}
		}
		if err := queryFlags(p.Query, ldns, ecs); err != nil {
			return exitCode(2, err)
		}
	}
	d, err := topology.Decide(p, rr)
	if err != nil {
		return exitCode(2, err)
	}
	if asJSON {
		return writeTopologyJSON(cmd, d)
	}
	return d.WriteText(cmd.OutOrStdout())
}

// queryFlags sets --ldns and --ecs, when given, on q.
func queryFlags(q *topology.Query, ldns, ecs string) error {
	if ldns != "" {
		a, err := netip.ParseAddr(ldns)
		if err != nil {
			return fmt.Errorf("--ldns %q: not an IP address (want e.g. 10.1.2.7)", ldns)
		}
		q.LDNS = a.Unmap()
	}
	if ecs != "" {
		p, err := netip.ParsePrefix(ecs)
		if err != nil {
			return fmt.Errorf("--ecs %q: not CIDR (want e.g. 10.9.0.0/24)", ecs)
		}
		q.ECS = p
	}
	return nil
}

// topologyInput turns the flags and text, the YAML read from --file path, into the set (or the
// worked example) and the query.
func topologyInput(path, text, ldns, ecs string, example, withoutRegion bool) (*topology.Set, topology.Query, error) {
	var q topology.Query
	var set *topology.Set
	switch {
	case example && path != "":
		return nil, q, errors.New("--example and --file: give one")
	case withoutRegion && !example:
		return nil, q, errors.New("--without-region only applies to --example")
	case example && withoutRegion:
		set, q = topology.ExampleWithoutRegion(), topology.ExampleQuery()
	case example:
		set, q = topology.Example(), topology.ExampleQuery()
	case path == "":
		return nil, q, errors.New("--file is required (or --example for the worked example)")
	case ldns == "":
		return nil, q, errors.New("--ldns is required with a YAML --file: the address the query comes from (a tmsh paste can say it in a source line)")
	default:
		var err error
		if set, err = topology.Parse(strings.NewReader(text)); err != nil {
			return nil, q, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := queryFlags(&q, ldns, ecs); err != nil {
		return nil, q, err
	}
	return set, q, nil
}
