package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/stopsignal"
	"github.com/zero502/zero502/watchdog"
)

func newWatchdogCmd() *cobra.Command {
	var configPath, hostName string
	var loop, asJSON bool
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "watchdog --config FILE [--host NAME] [--loop]",
		Short: "One watchdog tick: heal a service after heal_after consecutive failed checks",
		Long: `One tick of the self-healing watchdog (a systemd timer runs it every watchdog.interval; the units are
in watchdog/systemd). It takes the host lock without waiting: when a deploy or a flock(1) script
holds it, the tick is skipped and no failure counter changes. Otherwise it reads the host's
published spec (it never writes it), checks each service (HTTP GET on its health path; the
container or process state for a service without a port), counts consecutive failures in
<state dir>/watchdog.json and, on the watchdog.heal_after-th, recreates the service from the
spec. A service the spec marks stopped is never started. No published spec is nothing to watch on a
fresh host; while the host's services run it is an error (the spec was published at another
state_dir than this config's). Exit 1 when a host could not be checked or a heal failed (the other
services were still checked and healed). Heals are JSON log lines on stderr and
counters in <state dir>/zero502_watchdog.prom (Prometheus textfile).

Without --host it watches the host named like this machine, else, in a config with no host over
ssh (the local demo), every host.`,
		Example: `  zero502 watchdog --config /etc/zero502/zero502.yaml --host app-1
  zero502 watchdog --config examples/local.yaml --loop     # tick every watchdog.interval
  flock "$(zero502 host lock-path --config examples/local.yaml --host host-a)" sleep 30 &  # while held, ticks are skipped`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := logs.logger(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg, err := config.Load(configPath)
			if err != nil {
				return exitCode(2, err)
			}
			hosts, err := watchdog.Hosts(cfg, hostName)
			if err != nil {
				return exitCode(2, err)
			}
			ws, err := watchdog.ForHosts(cfg, hosts, watchdog.Options{Logger: logger})
			if err != nil {
				return exitCode(2, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			show := tickWriter(cmd.OutOrStdout(), logger, asJSON)
			if loop {
				watchdog.Loop(ctx, ws, cfg.Watchdog.Interval, show)
				return nil
			}
			if err := watchdog.TickEach(ctx, ws, show); err != nil {
				return exitCode(1, err)
			}
			return nil
		},
	}
	configFlag(cmd, &configPath)
	cmd.Flags().StringVar(&hostName, "host", "", "the host of the config this machine is (default: by hostname, else every host of a config with none over ssh)")
	cmd.Flags().BoolVar(&loop, "loop", false, "tick every watchdog.interval until interrupted (development; servers use the systemd timer)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each tick's report as one JSON line")
	logs = addLogFlags(cmd, false)
	return cmd
}

// tickWriter renders each tick: the report as a line of text (or of JSON with --json), and a
// host that could not be checked as an error log line (and its JSON line's error).
func tickWriter(out io.Writer, logger *slog.Logger, asJSON bool) func(watchdog.Report, error) {
	return func(rep watchdog.Report, err error) {
		if err != nil {
			logger.Error("tick failed", "host", rep.Host, "error", err.Error())
		}
		if asJSON {
			line := struct {
				watchdog.Report
				Error string `json:"error,omitempty"`
			}{Report: rep}
			if err != nil {
				line.Error = err.Error()
			}
			data, _ := json.Marshal(line)
			fmt.Fprintln(out, string(data))
		} else if err == nil {
			fmt.Fprintln(out, rep)
		}
	}
}
