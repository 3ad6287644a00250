package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/invariants"
)

// liveTimeout bounds reading the live balancer's settings (the AWS SDK retries on its own).
const liveTimeout = 30 * time.Second

func newInvariantsCmd() *cobra.Command {
	var path string
	var asJSON, live bool
	cmd := &cobra.Command{
		Use:   "invariants",
		Short: "Check how the config's timing numbers relate (I1–I16): drain vs detection, stop grace, …",
		Long: `Evaluates every invariant of the config's timing numbers (docs/ARCHITECTURE.md, "The numbers
and their invariants") and prints, for each, the relation, the numbers put in, and whether it
holds, is violated, warned or is skipped (it does not apply, e.g. I6 with no edge configured).
Each violation says what to change. A warning (I12, I13: the canary or a batch would not get
rollout.analysis.min_requests at rollout.analysis.expected_rate; I14: rollout.lock_lease does not
outlast a batch; I15: a rollout.batch share comes to less than one host) says what to change too,
but it rests on an estimate: it does not change the exit status, and a deploy goes on.

With --live it first reads the settings the balancer really runs (balancer.kind inhouse: the
LB's admin API at balancer.admin; alb: the target group through the AWS SDK's default credential
chain, ZERO502_ALB_ENDPOINT replacing the regional endpoint when set), reports every field where
they differ from the config (key, config, live: someone changed the interval in the console or
started the LB with other flags), and evaluates the invariants on the live numbers.

Exit status: 0 every applicable invariant holds or warns (and, with --live, no drift), 1 at least one is
violated or a live setting drifted, 2 the config is invalid (it does not load), or with --live
the balancer cannot be read (unreachable, no credentials, kind none).`,
		Example: `  zero502 invariants --config examples/production.yaml
  zero502 invariants --config examples/local.yaml --json
  ZERO502_DRAIN_WINDOW=10s zero502 invariants --config examples/production.yaml   # exits 1: I1
  zero502 invariants --live --config examples/local.yaml        # against the running zero502 lb
  zero502 invariants --live --config examples/production.yaml   # against the ALB (AWS credentials)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(path)
			if err != nil {
				return exitCode(2, err)
			}
			out := cmd.OutOrStdout()
			var lv *liveView
			if live {
				if lv, err = readLive(cmd.Context(), cfg); err != nil {
					return exitCode(2, err)
				}
				evaluated := *cfg
				evaluated.Balancer.BalancerNumbers = cfg.Balancer.Overlay(lv.Settings.BalancerNumbers, lv.Settings.Reported)
				cfg = &evaluated
			}
			sum := invariants.Summary{Verdicts: invariants.Evaluate(cfg), Live: lv != nil, Drifted: lv.drifted()}
			if asJSON {
				err = writeVerdictsJSON(out, path, lv, sum)
			} else {
				if lv != nil {
					err = writeDrift(out, lv)
				}
				if err == nil {
					err = writeVerdicts(out, sum.Verdicts)
				}
			}
			if err != nil {
				return err
			}
			if err := sum.Err(); err != nil {
				return exitCode(1, fmt.Errorf("%s: %w", path, err))
			}
			return nil
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdicts as JSON")
	cmd.Flags().BoolVar(&live, "live", false,
		"read the running balancer's settings, report drift field by field and check the invariants on them")
	return cmd
}

// liveView is what --live read from the running balancer.
type liveView struct {
	Balancer string            `json:"balancer"`
	Settings balancer.Settings `json:"settings"`
	Drift    []config.Drift    `json:"drift"`
}

// drifted names the drifted fields; none without a live reading.
func (lv *liveView) drifted() []string {
	if lv == nil {
		return nil
	}
	fields := make([]string, 0, len(lv.Drift))
	for _, d := range lv.Drift {
		fields = append(fields, d.Field)
	}
	return fields
}

// readLive reads cfg's balancer (the deployer's view of it) and compares it with the config.
func readLive(ctx context.Context, cfg *config.Config) (*liveView, error) {
	bal, err := balancer.For(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()
	settings, drift, err := balancer.LiveDrift(ctx, bal, cfg.Balancer)
	if errors.Is(err, balancer.ErrNoView) {
		return nil, fmt.Errorf("--live: balancer.kind %s has no live settings to read; use inhouse or alb, or drop --live", cfg.Balancer.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("--live: reading %s: %w", bal.Name(), err)
	}
	if drift == nil {
		drift = []config.Drift{}
	}
	return &liveView{Balancer: bal.Name(), Settings: settings, Drift: drift}, nil
}

// writeDrift prints which balancer was read and a table of every drifted field (key, config, live).
func writeDrift(w io.Writer, lv *liveView) error {
	fmt.Fprintf(w, "live balancer: %s\n", lv.Balancer)
	if len(lv.Drift) == 0 {
		fmt.Fprintln(w, "drift: none (every setting it reports matches the config)")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "DRIFT\tCONFIG\tLIVE")
		for _, d := range lv.Drift {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Field, d.Config, d.Live)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\ninvariants on the live numbers:\n")
	return err
}

// writeVerdicts prints a table (id, status, numbers, relation), then the sentence of every
// invariant that is not plainly holding.
func writeVerdicts(w io.Writer, verdicts []invariants.Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tNUMBERS\tRELATION")
	for _, v := range verdicts {
		nums := v.Arithmetic
		if nums == "" {
			nums = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.ID, v.Status, nums, v.Relation)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range verdicts {
		if v.Status != invariants.Holds {
			fmt.Fprintf(w, "\n%s %s: %s\n", v.ID, v.Status, v.Sentence)
		}
	}
	return nil
}

func writeVerdictsJSON(w io.Writer, path string, lv *liveView, sum invariants.Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Config     string               `json:"config"`
		Live       *liveView            `json:"live,omitempty"`
		Violated   int                  `json:"violated"`
		Warned     int                  `json:"warned"`
		Invariants []invariants.Verdict `json:"invariants"`
	}{path, lv, len(sum.Violated()), len(sum.Warned()), sum.Verdicts})
}
