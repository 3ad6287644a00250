package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/printable"
)

func newStatusCmd() *cobra.Command {
	var (
		cfgPath string
		asJSON  bool
		opts    deployer.Options
	)
	cmd := &cobra.Command{
		Use:   "status --config FILE [--json]",
		Short: "Show what runs where against each host's published spec; exit 1 when they disagree",
		Long: `status shows, for each host and service: the version the published spec asks for and the
version that runs, the instance (pid or container id) and since when, its health directly and at
the balancer (in rotation or not), the host lock's holder if any, and the watchdog's streak and
last heal. It changes nothing (no lock taken, no file written).
Exit 0: every host agrees with its spec (one healthy instance of the spec's version per service,
in rotation; nothing of a service the spec marks stopped); 1: it does not (a host never deployed
has no spec to agree with; a host reached over ssh is read there over ssh), each
disagreement listed, or the Docker Engine does not answer; 2: bad flags or config.`,
		Example: `  zero502 status --config examples/local.yaml
  zero502 status --config examples/local.yaml --json | jq '.hosts[].services[].problems'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			st, err := deployer.Status(cmd.Context(), cfg, opts)
			if err != nil {
				// An engine or endpoint that does not answer (the Docker Engine, a balancer) is a
				// failure at run time, exit 1, as logs has it; anything else the look refuses
				// before reading a host is the config's, exit 2.
				if ne := net.Error(nil); errors.As(err, &ne) {
					return exitCode(1, err)
				}
				return exitCode(2, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				_ = json.NewEncoder(out).Encode(map[string]any{"ok": st.OK(), "status": st})
			} else {
				writeStatus(out, st, time.Now())
			}
			if !st.OK() {
				return exitCode(1, nil)
			}
			return nil
		},
	}
	configFlag(cmd, &cfgPath)
	cmd.Flags().BoolVar(&asJSON, "json", false, `one JSON object: {"ok": bool, "status": {...}}`)
	cmd.Flags().StringVar(&opts.RemoteBinary, "remote-binary", "zero502", "zero502 binary on hosts with ssh: (they are read there, with zero502 host look)")
	parallelFlag(cmd.Flags(), &opts.Parallel)
	return cmd
}

// writeStatus renders a fleet's status as a table, then each disagreement, printable: what the
// hosts' looks said cannot drive the terminal.
func writeStatus(w io.Writer, st *deployer.FleetStatus, now time.Time) {
	w = printable.Writer(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSERVICE\tSPEC\tRUNS\tINSTANCE\tSINCE\tHEALTH\tBALANCER\tLOCK\tWATCHDOG")
	var problems, secretLines []string
	for _, h := range st.Hosts {
		lock := dash(h.LockHeldBy)
		for _, p := range h.Problems {
			problems = append(problems, h.Host+": "+p)
		}
		if len(h.Services) == 0 { // not read (its look failed): its row claims nothing, its problem says why
			fmt.Fprintf(tw, "%s\t-\t%s\tunknown\t-\t-\t-\t-\t%s\t-\n", h.Host, dash(h.Published), lock)
		}
		for _, s := range h.Services {
			want := dash(s.Want)
			if s.Stopped {
				want += " (stopped)"
			}
			wd := "-"
			if s.Watchdog != nil {
				wd = fmt.Sprintf("%d failing, %d heals", s.Watchdog.Failures, s.Watchdog.Heals)
				if !s.Watchdog.LastHeal.IsZero() {
					wd += ", last " + s.Watchdog.LastHeal.Format(time.RFC3339)
				}
			}
			for _, p := range s.Problems {
				problems = append(problems, h.Host+"/"+s.Service+": "+p)
			}
			if len(s.Secrets) > 0 {
				var names []string
				for _, name := range slices.Sorted(maps.Keys(s.Secrets)) {
					names = append(names, name+" ("+s.Secrets[name]+")")
				}
				secretLines = append(secretLines, h.Host+"/"+s.Service+": "+strings.Join(names, ", "))
			}
			if len(s.Instances) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\t-\t-\t%s\t%s\n", h.Host, s.Service, want, lock, wd)
				continue
			}
			for _, in := range s.Instances {
				health := "healthy"
				if !in.Healthy {
					health = "UNHEALTHY"
				}
				bal := "-"
				if in.Balancer != nil {
					bal = in.Balancer.State
					if in.Balancer.InRotation {
						bal += ", in rotation"
					} else {
						bal += ", out"
					}
				}
				since := in.Since.Local().Format("15:04:05") + " (" + now.Sub(in.Since).Round(time.Second).String() + ")"
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Host, s.Service, want, in.Version, in.ID, since, health, bal, lock, wd)
			}
		}
	}
	tw.Flush()
	if len(secretLines) > 0 {
		fmt.Fprintf(w, "\nsecrets (by name; a value is never shown, nor its digest):\n  %s\n", strings.Join(secretLines, "\n  "))
	}
	if len(problems) == 0 {
		fmt.Fprintln(w, "\nevery host agrees with its published spec")
		return
	}
	fmt.Fprintf(w, "\n%d disagreement(s) with the published specs:\n  %s\n", len(problems), strings.Join(problems, "\n  "))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
