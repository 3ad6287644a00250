package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/printable"
	"github.com/zero502/zero502/infra/stopsignal"
)

func newDeployCmd() *cobra.Command {
	var (
		cfgPath, version string
		metricsTextfile  string
		reportPath       string
		asJSON           bool
		opts             deployer.Options
	)
	cmd := &cobra.Command{
		Use:   "deploy --config FILE --version V",
		Short: "Roll a version across the fleet, host by host, through the drain handshake",
		Long: `deploy rolls every host of the config to version V, one batch (rollout.batch) at a time.
Preflight first, before anything changes: the invariants, the live balancer's settings against
the config (drift is refused unless --accept-drift), every running target healthy, and no batch
draining the last healthy target. Then per host: take the host lock (waiting for a holder,
up to --lock-timeout), publish the new spec, stop each old instance through the handshake
(SIGTERM; /health answers 503 while it keeps serving) while watching the balancer take it out of
rotation, start the new one, wait until it is healthy directly and back in rotation, hold every
new instance for its stability window (balancer.healthy_threshold × balancer.interval from its
start, the time the balancer itself needs to trust it: overlapping that wait, it costs the
balanced service next to nothing) while re-inspecting it, verify every service, release the
lock. A new instance that exits while waited for fails the step at once, naming host, service
and exit code. A host that fails is rolled back to its previous spec and the rollout stops.
rollout.runtime says what hosts run: process (local processes) or docker (containers through
the Docker Engine at rollout.docker_host, else DOCKER_HOST, else the local socket). A host with
ssh: user@host[:port] runs its step there, through the system ssh client (zero502 host --help).
Hosts already on V are verified, not redeployed, so a rerun finishes an
interrupted deploy. Exit 0: every host on V; 1: the rollout failed (the report says which host
runs which version); 2: refused before anything changed.`,
		Example: `  zero502 lb --config examples/local.yaml &          # the balancer, in its own terminal
  zero502 deploy --config examples/local.yaml --version v1
  zero502 deploy --config examples/local.yaml --version v2 --json > deploy.jsonl
  zero502 deploy --config examples/local.yaml --version v3 --lock-timeout 30s
  zero502 deploy --config examples/local.yaml --version v4 --report deploy.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version == "" {
				return exitCode(2, errors.New("--version is required: the version to deploy, e.g. --version v2"))
			}
			switch {
			case opts.LockTimeout < 0:
				return exitCode(2, fmt.Errorf("--lock-timeout %s: must not be negative (0 refuses at once when another deploy holds the lock)", opts.LockTimeout))
			case opts.LockTimeout == 0:
				opts.NoLockWait = true
			}
			if err := report.CheckMetricsTextfileName(metricsTextfile); metricsTextfile != "" && err != nil {
				return exitCode(2, fmt.Errorf("--metrics-textfile: %w", err))
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			if metricsTextfile != "" { // its directory once the config holds: a refused deploy makes none
				if err := report.CheckMetricsTextfile(metricsTextfile); err != nil {
					return exitCode(2, fmt.Errorf("--metrics-textfile: %w", err))
				}
			}
			var htmlOut *os.File
			if reportPath != "" {
				if htmlOut, err = os.Create(reportPath); err != nil {
					return exitCode(2, fmt.Errorf("--report %s: %w; give a file zero502 can write, e.g. --report deploy.html", reportPath, err))
				}
				defer htmlOut.Close()
			}
			out := cmd.OutOrStdout()
			opts.Events = progress(out, asJSON)
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			rep, err := deployer.New(cfg, opts).Deploy(ctx, version)
			var textfileErr error // a deploy that rolled is not undone by it, but its exit says so
			if metricsTextfile != "" && rep != nil {
				if textfileErr = report.WriteMetricsTextfile(metricsTextfile, *rep); textfileErr != nil {
					textfileErr = fmt.Errorf("--metrics-textfile: %w; monitoring still reads the previous deploy's outcome", textfileErr)
				}
			}
			renderReport(out, rep, asJSON)
			var htmlErr error // as textfileErr: it does not change what the deploy did, nor its exit when it failed
			if htmlOut != nil {
				werr := writeDeployHTML(htmlOut, rep)
				if cerr := htmlOut.Close(); werr == nil {
					werr = cerr
				}
				if werr != nil {
					htmlErr = fmt.Errorf("--report %s: %w", reportPath, werr)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", reportPath)
				}
			}
			if err == nil {
				if werr := errors.Join(htmlErr, textfileErr); werr != nil {
					return exitCode(1, werr)
				}
				return nil
			}
			for _, werr := range []error{htmlErr, textfileErr} {
				if werr != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", cmd.CommandPath(), werr)
				}
			}
			if !asJSON {
				err = nil // the report above already says what went wrong
			}
			if rep.Refused {
				return exitCode(2, err)
			}
			return exitCode(1, err)
		},
	}
	configFlag(cmd, &cfgPath)
	f := cmd.Flags()
	f.StringVar(&version, "version", "", "version to deploy (required); fills {version} in images and commands")
	f.StringVar(&reportPath, "report", "", "also write a self-contained HTML report (SVG timeline per host) to this file, e.g. deploy.html")
	f.BoolVar(&asJSON, "json", false, "one JSON event per line, then the report as one JSON object")
	f.StringVar(&metricsTextfile, "metrics-textfile", "",
		"write the outcome for node_exporter's textfile collector, e.g. /var/lib/node_exporter/textfile/zero502_deploy.prom")
	f.BoolVar(&opts.AcceptDrift, "accept-drift", false,
		"deploy although the live balancer's settings differ from the config (invariants still apply)")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", deployer.DefaultLockTimeout,
		"how long to wait for the fleet lock or a host lock another deploy holds (0: refuse at once, naming the holder)")
	f.BoolVar(&opts.Naive, "naive", false,
		"kill old instances at once, no drain, no balancer watch: the failing 'before' picture, for demos")
	f.StringVar(&opts.Self, "self", "", "zero502 binary that {self} stands for (default: this one)")
	stepBinaryFlag(f, &opts.RemoteBinary)
	parallelFlag(f, &opts.Parallel)
	f.BoolVar(&opts.PauseAfterCanary, "pause-after-canary", false,
		"once the canary's verdict passed, wait with the fleet serving both versions for zero502 deploy promote or abort")
	cmd.AddCommand(newDecideCmd(deployer.Promote, "Roll the rest of the fleet to the version of the deploy paused after its canary"),
		newDecideCmd(deployer.Abort, "Roll the canary of the deploy paused after it back to what it ran before"))
	return cmd
}

// renderReport writes a deploy's report: one JSON object after the events, or the text tables.
func renderReport(out io.Writer, rep *report.Report, asJSON bool) {
	if asJSON {
		_ = json.NewEncoder(out).Encode(map[string]any{"report": rep})
		return
	}
	fmt.Fprintln(out)
	_ = rep.WriteText(printable.Writer(out)) // what hosts reported cannot drive the terminal
}

// progress renders deploy events: one line per step (elapsed, host, step, message), its text
// printable (a host's step relays its own events: what it says cannot drive the terminal), or
// one JSON object per line.
func progress(w io.Writer, asJSON bool) func(deployer.Event) {
	if asJSON {
		enc := json.NewEncoder(w)
		return func(e deployer.Event) { _ = enc.Encode(e) }
	}
	w = printable.Writer(w)
	return func(e deployer.Event) {
		host := e.Host
		if host == "" {
			host = "-"
		}
		if e.Service != "" {
			host += "/" + e.Service
		}
		fmt.Fprintf(w, "%8s  %-14s %-13s %s\n", (e.Elapsed()).Round(10*time.Millisecond), host, e.Step, e.Message)
	}
}

// writeDeployHTML writes rep as the self-contained HTML report demo --report writes.
func writeDeployHTML(w io.Writer, rep *report.Report) error {
	intro := fmt.Sprintf("A rolling deploy to %s, host by host through the drain: each host's handshake as the deployer saw it "+
		"(drain, left rotation, stopped, new started, healthy, back in rotation), seconds from the deploy's start.", html.EscapeString(rep.Version))
	return report.WriteHTML(w, "zero502 deploy "+rep.Version, intro, rep.ReportHTML())
}

// stepBinaryFlag is --remote-binary of the commands that run a host's step over ssh (deploy,
// deploy promote|abort, rollback): every one of them must reach the same zero502 on the hosts.
func stepBinaryFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "remote-binary", "zero502",
		"zero502 binary on hosts with ssh: (their step runs there as zero502 host step; see zero502 host --help); ~/ is the remote user's home")
}
