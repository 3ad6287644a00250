package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

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
		Long: `Reads a set of GTM topology records (YAML that reads like tmsh: records, regions, a
geolocation table, the pools) and answers one query: it sorts the records the way Longest Match
does (negation group, then source, then destination, then score), walks them, gives each
candidate the score of the FIRST record that matches it, marks every later record for that
candidate as shadowed, and picks the highest score (equal scores round robin, --rr).

Longest Match orders, it does not choose: a wildcard worth 100 beats a /32 worth 5. Cases the
sources (the BIG-IP GTM Load Balancing manual, F5 K10721) do not decide are listed as warnings,
not guessed silently; so are pools whose fallback is not none when topology runs at both levels.

--example runs the worked example (a /24 gives POOL1 30, a region around it gives POOL2 20, a
wildcard gives POOL2 40: POOL1 wins 30 to 20, the 40 is shadowed); --without-region deletes the
region record and the answer flips to POOL2.

Exit status: 0 the decision was explained (a winner, or no topology match), 2 the file or the
flags are invalid (nothing was computed).`,
		Example: `  zero502 topology --example
  zero502 topology --example --without-region
  zero502 topology --file gtm-topology.yaml --ldns 10.1.2.7
  zero502 topology --file gtm-topology.yaml --ldns 10.1.2.7 --ecs 10.9.0.0/24 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, q, err := topologyInput(path, ldns, ecs, example, withoutRegion)
			if err != nil {
				return exitCode(2, err)
			}
			res := set.Score(q, rr)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			return res.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&path, "file", "f", "", "topology set (YAML: records, regions, geo, pools)")
	cmd.Flags().StringVar(&ldns, "ldns", "", "the LDNS address the query comes from (--example: 10.1.2.7)")
	cmd.Flags().StringVar(&ecs, "ecs", "", "the query's EDNS0 Client Subnet (CIDR), classified when prefer_edns0_client_subnet is on")
	cmd.Flags().Uint64Var(&rr, "rr", 0, "round-robin counter for equal top scores (the winner is the rr-th of the tied, mod their number)")
	cmd.Flags().BoolVar(&example, "example", false, "run the built-in worked example instead of --file")
	cmd.Flags().BoolVar(&withoutRegion, "without-region", false, "with --example: delete the region record (the answer flips)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decision as JSON")
	return cmd
}

// topologyInput turns the flags into the set and the query.
func topologyInput(path, ldns, ecs string, example, withoutRegion bool) (*topology.Set, topology.Query, error) {
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
		return nil, q, errors.New("--ldns is required with --file: the address the query comes from")
	default:
		var err error
		if set, err = topology.Load(path); err != nil {
			return nil, q, err
		}
	}
	if ldns != "" {
		a, err := netip.ParseAddr(ldns)
		if err != nil {
			return nil, q, fmt.Errorf("--ldns %q: not an IP address", ldns)
		}
		q.LDNS = a
	}
	if ecs != "" {
		p, err := netip.ParsePrefix(ecs)
		if err != nil {
			return nil, q, fmt.Errorf("--ecs %q: not CIDR (want e.g. 10.9.0.0/24)", ecs)
		}
		q.ECS = p
	}
	return set, q, nil
}
