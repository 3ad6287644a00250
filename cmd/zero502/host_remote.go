package main

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/infra/stopsignal"
)

// The host's side of `zero502 stop` and `zero502 logs` for a host reached over ssh: what they
// run there, with the config on stdin, as `host step` does for a deploy.

func newHostStopCmd() *cobra.Command {
	var (
		cfgPath, name, service string
		opts                   deployer.Options
	)
	cmd := &cobra.Command{
		Use:   "stop --config - --host NAME [--service S]",
		Short: "Run one host's part of zero502 stop here: lock, spec marks stopped, drain",
		Long: `stop runs host NAME's part of zero502 stop on this machine: its own lock, the spec marking
the services stopped, each instance drained its way. It prints one JSON event per line, then
{"stopped":true} or {"error":"…"}. Exit 0: stopped; 1: failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, stdin, framed, err := hostNamedConfig(cmd, cfgPath, name)
			if err != nil {
				return err
			}
			signal.Ignore(syscall.SIGPIPE) // a gone deployer is heard through stdin (untilDeployerGone)
			ctx, stop := stopsignal.Context(cmd.Context(), syscall.SIGHUP)
			defer stop()
			// A deployer gone (or cancelled) while this stop waits for the host lock must not
			// have it stop the services minutes later, when the lock comes free: it ends, as a
			// cancelled local stop does.
			ctx, cancel := untilDeployerGone(ctx, stdin, framed)
			defer cancel()
			if opts.LockTimeout == 0 {
				opts.NoLockWait = true
			}
			return hostResult(cmd, &opts, func() (any, error) {
				err := deployer.HostStop(ctx, cfg, name, service, opts)
				return deployer.StopResult{Stopped: err == nil, Error: errorText(err)}, err
			})
		},
	}
	hostFlags(cmd, &cfgPath, &name, "zero502 stop")
	f := cmd.Flags()
	f.StringVar(&service, "service", "", "stop this service only (default: every service)")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", deployer.DefaultLockTimeout, "how long to wait for the host lock (0: refuse at once)")
	return cmd
}

func newHostLogsCmd() *cobra.Command {
	var (
		cfgPath, name, service string
		follow                 bool
	)
	cmd := &cobra.Command{
		Use:   "logs --config - --host NAME --service S [-f]",
		Short: "Print one host's service output here (what zero502 logs runs over ssh)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "host", "service"); err != nil {
				return err
			}
			cfg, stdin, framed, err := hostConfig(cmd, cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context(), syscall.SIGHUP)
			defer stop()
			// A follow ends with its deployer's session (zero502 logs interrupted), not only when
			// a write to the gone session fails: a quiet log is never written again.
			ctx, cancel := untilDeployerGone(ctx, stdin, framed)
			defer cancel()
			if err := deployer.HostLogs(ctx, cfg, name, service, follow, cmd.OutOrStdout()); err != nil {
				return exitCode(1, err)
			}
			return nil
		},
	}
	hostFlags(cmd, &cfgPath, &name, "zero502 logs")
	f := cmd.Flags()
	f.StringVar(&service, "service", "", "the service, as the config names it")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new output until the connection ends")
	return cmd
}
