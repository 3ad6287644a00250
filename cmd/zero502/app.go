package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/app"
	"github.com/zero502/zero502/infra/stopsignal"
)

func newAppCmd() *cobra.Command {
	var o app.Options
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "app --version V --port P",
		Short: "Run the demo service: version on /, /health, POST /orders, /slow; drains on SIGTERM",
		Long: `app is the service the demo deploys and a worked example of the drain contract.
GET / answers "version V" (headers X-Version, X-Backend), GET /health answers 200 "ok",
POST /orders with an Idempotency-Key header answers 201 and appends {"key","version","at"} to
--orders-log, GET /orders lists this process's orders, GET /slow?ms=N answers after N ms.
On SIGTERM or SIGINT: /health answers 503 for --drain while everything else is served (with
Connection: close) and new connections are accepted; then it stops accepting, lets in-flight
requests finish within --shutdown and exits 0. Logs are JSON lines on stderr.`,
		Example: `  zero502 app --version v1 --port 19001
  zero502 app --version v2 --port 19001 --drain 1500ms --shutdown 1s --idle-timeout 10s
  zero502 app --version bad --port 19001 --start-unhealthy      # never becomes healthy
  zero502 app --version v1 --port 19001 --orders-log /tmp/orders.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// required here, not by cobra's MarkFlagRequired, whose error exits 1 (the app's own
			// failure); one given empty is Validate's
			if !cmd.Flags().Changed("version") {
				return requireFlags(cmd, "version")
			}
			if o.Port < 1 || o.Port > 65535 {
				return exitCode(2, fmt.Errorf("--port %d: give the port to listen on, 1-65535", o.Port))
			}
			if err := o.Validate(); err != nil { // a bad flag, not the app's own failure
				return exitCode(2, err)
			}
			var err error
			if o.Logger, err = logs.logger(cmd, cmd.ErrOrStderr()); err != nil {
				return err
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			err = app.Run(ctx, o)
			if errors.Is(err, app.ErrExitAfter) {
				return exitCode(1, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Version, "version", "", "version this instance answers with (required)")
	f.IntVar(&o.Port, "port", 0, "port to listen on (required)")
	f.StringVar(&o.Host, "host", app.DefaultHost, "address to listen on")
	f.DurationVar(&o.Drain, "drain", app.DefaultDrain, "drain window: how long /health answers 503 while serving after SIGTERM")
	f.DurationVar(&o.Shutdown, "shutdown", app.DefaultShutdown, "budget for in-flight requests after the drain window")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", app.DefaultIdleTimeout, "keep-alive idle timeout; must exceed the balancer's (invariant I7)")
	f.BoolVar(&o.StartUnhealthy, "start-unhealthy", false, "answer /health with 503 from the start (a version that never gets healthy)")
	f.DurationVar(&o.FailHealthAfter, "fail-health-after", 0, "answer /health with 503 from this long after start on (0: never)")
	f.DurationVar(&o.ExitAfter, "exit-after", 0, "exit 1 this long after start, without draining (0: never)")
	f.StringVar(&o.OrdersLog, "orders-log", "", "file POST /orders appends one JSON line to per execution")
	f.IntVar(&o.FailEvery, "fail-every", 0, "answer 500 to every Nth request but /health, which stays 200 (1: every request; 0: never): a bad version")
	f.DurationVar(&o.FailFor, "fail-for", 0, "answer 500 to every request but /health for this long after start, while /health stays 200 (0: never): a version that fails while it warms up")
	f.DurationVar(&o.Delay, "delay", 0, "wait this long before every answer but /health's: a slow version")
	logs = addLogFlags(cmd, false)
	return cmd
}
