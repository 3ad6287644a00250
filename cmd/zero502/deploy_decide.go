package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newDecideCmd is deploy promote or deploy abort: the decision on a deploy paused after its
// canary (deploy --pause-after-canary).
func newDecideCmd(decision, short string) *cobra.Command {
	var (
		cfgPath string
		asJSON  bool
		wait    time.Duration
		opts    deployer.Options
	)
	cmd := &cobra.Command{
		Use:   decision + " --config FILE",
		Short: short,
		Long: short + `. The paused deploy, if it still waits (it holds the fleet lock), takes the
decision and goes on; if it was stopped, this command takes the fleet lock and does the work
itself. Exit 0 when the decision was carried out, 1 when it failed, 2 when nothing is paused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if wait <= 0 { // the decision would be recorded for the paused deploy, then reported as not taken
				return exitCode(2, fmt.Errorf("--wait %s: must be a positive duration (how long the paused deploy gets to take the decision)", wait))
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			out := cmd.OutOrStdout()
			opts.Events = progress(out, asJSON)
			opts.LockTimeout = deployer.DefaultLockTimeout
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			rep, err := deployer.Decide(ctx, cfg, decision, opts, wait)
			if errors.Is(err, deployer.ErrNotPaused) {
				return exitCode(2, err)
			}
			if rep == nil && err == nil {
				// A notice, on stderr as deploy's "report:" is: stdout is the events and the report
				// (with --json, JSON lines only).
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: the paused deploy took it and goes on (its own output says how it ends)\n", decision)
				return nil
			}
			if rep != nil {
				renderReport(out, rep, asJSON)
			}
			if err != nil {
				if rep != nil && rep.Refused {
					return exitCode(2, err)
				}
				return exitCode(1, err)
			}
			return nil
		},
	}
	configFlag(cmd, &cfgPath)
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "one JSON event per line, then the report as one JSON object")
	f.DurationVar(&wait, "wait", time.Minute, "how long to wait for a paused deploy that still runs to take the decision")
	f.StringVar(&opts.Self, "self", "", "zero502 binary that {self} stands for (default: this one)")
	stepBinaryFlag(f, &opts.RemoteBinary)
	return cmd
}

// newRollbackCmd is zero502 rollback: a deploy of the version the fleet ran before (or --to).
func newRollbackCmd() *cobra.Command {
	var (
		cfgPath, to string
		asJSON      bool
		opts        deployer.Options
	)
	cmd := &cobra.Command{
		Use:   "rollback --config FILE [--to VERSION]",
		Short: "Roll the fleet back to the version it ran before its last deploy (or --to VERSION)",
		Long: `rollback is a deploy of the version every host ran before its last deploy (recorded beside
its spec), or of --to VERSION: the same preflight, drain, analysis and report as deploy. Exit codes
as deploy's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to != "" {
				if err := deployer.CheckVersion("--to", to); err != nil { // before anything is printed
					return exitCode(2, err)
				}
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			if to == "" {
				if to, err = deployer.PreviousVersion(cfg); err != nil {
					return exitCode(2, fmt.Errorf("rollback: %w", err))
				}
			}
			out := cmd.OutOrStdout()
			opts.Events = progress(out, asJSON)
			opts.LockTimeout = deployer.DefaultLockTimeout
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			// A notice, on stderr as deploy's "report:" is: stdout is the events and the report
			// (with --json, JSON lines only).
			fmt.Fprintf(cmd.ErrOrStderr(), "rolling back to %s\n", to)
			rep, err := deployer.New(cfg, opts).Deploy(ctx, to)
			renderReport(out, rep, asJSON)
			switch {
			case err == nil:
				return nil
			case rep.Refused:
				return exitCode(2, err)
			default:
				return exitCode(1, err)
			}
		},
	}
	configFlag(cmd, &cfgPath)
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "the version to roll back to (default: what every host ran before its last deploy)")
	f.BoolVar(&asJSON, "json", false, "one JSON event per line, then the report as one JSON object")
	f.StringVar(&opts.Self, "self", "", "zero502 binary that {self} stands for (default: this one)")
	stepBinaryFlag(f, &opts.RemoteBinary)
	return cmd
}
