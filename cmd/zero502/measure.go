package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer/measure"
	"github.com/zero502/zero502/infra/stopsignal"
)

func newMeasureCmd() *cobra.Command {
	var (
		o             measure.Options
		asJSON        bool
		allowFailures bool
	)
	cmd := &cobra.Command{
		Use:   "measure URL",
		Short: "Send a steady mixed load and count every request that went nowhere",
		Long: `measure sends a steady, open-loop load (paced, never waiting for answers) of GET / and
POST /orders (each with a unique Idempotency-Key), on new and reused keep-alive connections,
and classifies every outcome: ok, 502, 503, 504, other 5xx, 4xx, refused, reset, timeout.
A 503 from the health endpoint is the drain at work, not a failure; a 503 on a real path is.
Exits 1 when any request failed (unless --allow-failures) or none was sent; Ctrl-C ends the
load early.`,
		Example: `  zero502 measure http://127.0.0.1:18080 --rate 400 --duration 30s
  zero502 measure http://127.0.0.1:18080 --duration 0 --json > load.json   # until Ctrl-C`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Target = args[0]
			l, err := measure.New(o)
			if err != nil {
				return exitCode(2, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			res := l.Run(ctx)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				res.WriteTable(out)
			}
			if res.Failed() && !allowFailures {
				return exitCode(1, nil)
			}
			if res.Sent == 0 { // no failure counted proves nothing: nothing was measured
				return exitCode(1, fmt.Errorf("no request was sent in %s, so nothing was measured; "+
					"give a --duration of at least one request's interval (1/--rate %d)", res.Elapsed.Round(time.Millisecond), o.Rate))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Rate, "rate", 300, "requests per second, paced steadily")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to send (0: until Ctrl-C)")
	f.Float64Var(&o.PostShare, "post-share", 0.25, "share of requests that are POST /orders")
	f.Float64Var(&o.HealthShare, "health-share", 0, "share of requests that are GET of the health path (their 503s are not failures)")
	f.Float64Var(&o.NewConnShare, "new-conn-share", 0.2, "share of requests sent on a new connection (the rest reuse keep-alive connections)")
	f.StringVar(&o.GetPath, "get-path", "/", "path (and query) of the GETs")
	f.StringVar(&o.PostPath, "post-path", "/orders", "path (and query) of the POSTs, e.g. /orders?ms=150 for orders that take 150 ms")
	f.StringVar(&o.HealthPath, "health-path", "/health", "the health endpoint, whose 503s are not failures")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Second, "bound on one request")
	f.DurationVar(&o.Bucket, "bucket", time.Second, "resolution of the time series in --json")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON (with the per-second series by class and version)")
	f.BoolVar(&allowFailures, "allow-failures", false, "exit 0 even when requests failed")
	return cmd
}
