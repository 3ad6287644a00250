package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer/demo"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/stopsignal"
)

func newDemoCmd() *cobra.Command {
	var (
		naive, compare, asJSON, keep  bool
		trafficLayer, badVersion      bool
		report, rt, image, dockerHost string
		service                       string
		rate                          int
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The whole loop on this machine: LB, three hosts, steady load, rolling deploy v1 → v2",
		Long: `demo starts the in-house LB and three local hosts from the embedded examples/local.yaml
(on free ports, state in a temp dir), deploys v1, puts a steady load through the LB, rolls v1 → v2
with the drain handshake and prints what users felt: requests by class, each host's timeline
and deploy time against its floor, every host's version. It stops everything it started.

--naive rolls without the handshake (SIGKILL at once) and shows the failures it removes;
--compare runs both. Exit 0 only when no request failed (--compare: when the handshake run was
clean and the naive run's failures were seen).

--runtime docker runs the same demo with containers on the Docker Engine: each host's app is a
container of --image (built FROM scratch through the Engine API when missing, as zero502 image
build does), listening on 0.0.0.0 inside and published on 127.0.0.1 at the host's port. Every
container the demo started is removed at its end.

--service python deploys an ordinary third-party server instead (python3 -m http.server from
the embedded examples/any-service.yaml): it exits at once on SIGTERM and never answers 503, so
the deployer drains each target at the LB first (drain: balancer) and starts the new version
beside the old one (start-first); the load GETs its version file and POSTs to a CGI script.

--traffic-layer runs the whole chain on this machine's loopback: a client that resolves the edges'
name through a local DNS server (zero502 dns serve), two edges (zero502 edge forward), two LB
instances (zero502 lb) and three apps. Under steady load (GET, POST and long-lived WebSocket
sessions) it rolls the apps through both LB instances, the LB instances through both edges, the
edges through the A record set, and upgrades one LB in place by handing its sockets to a new
process. Exit 0 only when no request failed and no session was lost, --naive too (it shows the
failures the handshake removes, and exits 1 for them, as demo --naive does).

--bad-version rolls a bad v2 (zero502 app --fail-every 1: a 500 to every request, /health 200)
on the same fleet and load: the canary takes its share, the analysis fails it, the fleet is
rolled back. It prints the canary's share, the verdict with its numbers, which host runs what,
what users got and the bound: canary.weight % × (bake + canary.duration + drain.window) × rate.
Exit 0 only when the bad version was stopped at the canary by a verdict, every host runs v1
again and the failed requests are within the bound (with a margin of 1.5× + 5).`,
		Example: `  zero502 demo
  zero502 demo --naive
  zero502 demo --compare --report demo.html
  zero502 demo --runtime docker
  zero502 demo --service python       # a third-party server: drained at the balancer, start-first
  zero502 demo --bad-version          # a bad v2: stopped at the canary, the fleet rolled back
  zero502 demo --traffic-layer        # DNS → edges → LB instances → apps, every tier rolled
  zero502 demo --runtime docker --image zero502/app:dev --docker-host unix:///var/run/docker.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			var live io.Writer = out
			if asJSON {
				live = cmd.ErrOrStderr()
			}
			m := demo.Mode{Naive: naive, Compare: compare, TrafficLayer: trafficLayer, BadVersion: badVersion,
				Rate: rate, RateSet: cmd.Flags().Changed("rate"), Runtime: rt, Image: image, ImageSet: cmd.Flags().Changed("image"),
				DockerHost: dockerHost, Service: service, Report: report, Progress: live, Keep: keep}
			if err := m.Validate(); err != nil {
				return exitCode(2, err)
			}
			var reportFile *os.File
			if report != "" {
				f, err := os.Create(report)
				if err != nil {
					return exitCode(2, fmt.Errorf("--report %s: %w", report, err))
				}
				defer f.Close()
				reportFile = f
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			o, err := demo.RunMode(ctx, m)
			if err != nil {
				return exitCode(2, err)
			}
			if err := renderMode(out, live, asJSON, o, reportFile); err != nil {
				return err
			}
			if failed, err := o.Failure(); failed {
				return exitCode(1, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&naive, "naive", false, "roll without the drain handshake (SIGKILL at once): the failures it removes")
	f.BoolVar(&compare, "compare", false, "run with the handshake, then naive, and print both side by side")
	f.BoolVar(&trafficLayer, "traffic-layer", false, "the whole chain: DNS → 2 edges → 2 LB instances → 3 apps under load; roll apps, LB instances, edges, then upgrade one LB in place")
	f.BoolVar(&badVersion, "bad-version", false, "roll a bad v2 (500 to every request, health 200): the canary stops it, the fleet rolls back; exit 0 when within the bound")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON (progress goes to stderr)")
	f.StringVar(&report, "report", "", "write a self-contained HTML report with an SVG timeline to this file")
	f.IntVar(&rate, "rate", demo.DefaultRate, "load in requests per second (--service python: 30 unless set)")
	f.BoolVar(&keep, "keep", false, "keep the temp dir (config, host state, logs) and print its path")
	f.StringVar(&rt, "runtime", demo.RuntimeProcess, "what the hosts run on: process or docker (containers)")
	f.StringVar(&image, "image", docker.DefaultTag, "image of the apps with --runtime docker; built when missing")
	f.StringVar(&service, "service", demo.ServiceApp, "what the hosts run: app (zero502 app, the drain handshake) or python "+
		"(python3 -m http.server, which knows nothing of it: drained at the balancer, start-first; examples/any-service.yaml)")
	f.StringVar(&dockerHost, "docker-host", "", "Docker Engine endpoint with --runtime docker (default: DOCKER_HOST, then the local socket)")
	completeDemoService(cmd)
	return cmd
}

func render(out io.Writer, asJSON, compare bool, runs []*demo.Result) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if compare && len(runs) == 2 {
			return enc.Encode(map[string]*demo.Result{"handshake": runs[0], "naive": runs[1]})
		}
		if len(runs) == 1 {
			return enc.Encode(runs[0])
		}
		return enc.Encode(runs)
	}
	switch {
	case compare && len(runs) == 2:
		demo.WriteCompare(out, runs[0], runs[1])
	default:
		for _, r := range runs {
			demo.WriteSummary(out, r)
		}
	}
	return nil
}

// renderMode writes what o's runs gave (indented JSON, or the text summaries) to out and, for
// the handshake and naive runs, the HTML report to reportFile (nil: none), saying so on live.
func renderMode(out, live io.Writer, asJSON bool, o *demo.Outcome, reportFile *os.File) error {
	switch {
	case o.Mode.BadVersion:
		if o.Bad != nil {
			renderDemo(out, asJSON, o.Bad, func() { demo.WriteBadSummary(out, o.Bad) })
		}
		return nil
	case o.Mode.TrafficLayer:
		if o.Traffic != nil {
			renderDemo(out, asJSON, o.Traffic, func() { demo.WriteTrafficSummary(out, o.Traffic) })
		}
		return nil
	}
	if err := render(out, asJSON, o.Mode.Compare, o.Runs); err != nil {
		return err
	}
	if reportFile != nil && len(o.Runs) > 0 {
		if err := demo.WriteHTML(reportFile, o.Runs...); err != nil {
			return fmt.Errorf("--report %s: %w", o.Mode.Report, err)
		}
		fmt.Fprintf(live, "report written to %s\n", o.Mode.Report)
	}
	return nil
}

// renderDemo writes a demo's result: indented JSON of r, or its text summary.
func renderDemo(out io.Writer, asJSON bool, r any, text func()) {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
		return
	}
	text()
}
