package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/stopsignal"
)

func newStopCmd() *cobra.Command {
	var (
		cfgPath string
		target  deployer.StopTarget
		opts    deployer.Options
	)
	cmd := &cobra.Command{
		Use:   "stop --config FILE [--host H] [--service S]",
		Short: "Stop services through the drain and mark them stopped, so the watchdog leaves them down",
		Long: `stop ends the services of the config (or only --service S) on every host (or only --host H)
through the same drain as a deploy. First it takes the fleet lock, as a deploy does, and holds it
to the end: while a deploy (or another stop) holds it, stop waits up to --lock-timeout and then
refuses, naming the holder (--lock-timeout 0 refuses at once), so a deploy running meanwhile
cannot start the services again on a host it reaches later; a maintenance lock (zero502 lock
acquire -m MSG) refuses it as it refuses a deploy. Then per host it takes the host lock,
republishes the spec with the services marked stopped (the watchdog never starts a stopped
service, and status then expects nothing to run), and drains each running instance its way (the
handshake, watched at the balancer, or drain: balancer played by zero502) before the signal,
with drain.stop_grace. The next zero502 deploy starts them again.
Exit 0: everything selected is stopped; 1: a host failed (the message names it); 2: bad flags or
config, or refused at the fleet lock before anything changed.`,
		Example: `  zero502 stop --config examples/local.yaml
  zero502 stop --config examples/local.yaml --host host-a --service web
  zero502 stop --config examples/local.yaml --lock-timeout 0   # refused at once while a deploy runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case opts.LockTimeout < 0:
				return exitCode(2, fmt.Errorf("--lock-timeout %s: must not be negative (0 refuses at once when another command holds the fleet lock or a host lock)", opts.LockTimeout))
			case opts.LockTimeout == 0:
				opts.NoLockWait = true
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			if err := target.Check(cfg); err != nil {
				return exitCode(2, err)
			}
			opts.Events = progress(cmd.OutOrStdout(), false)
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			if err := deployer.Stop(ctx, cfg, target, opts); err != nil {
				if refused := (*deployer.StopRefusedError)(nil); errors.As(err, &refused) {
					return exitCode(2, err)
				}
				return exitCode(1, err)
			}
			return nil
		},
	}
	configFlag(cmd, &cfgPath)
	f := cmd.Flags()
	f.StringVar(&target.Host, "host", "", "stop on this host only (default: every host)")
	f.StringVar(&target.Service, "service", "", "stop this service only (default: every service)")
	f.StringVar(&opts.RemoteBinary, "remote-binary", "zero502", "zero502 binary on hosts with ssh: (their stop runs there, as zero502 host stop)")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", deployer.DefaultLockTimeout, "how long to wait for the fleet lock (a deploy or stop running) or a host lock another command holds (0: refuse at once, naming the holder)")
	return cmd
}
