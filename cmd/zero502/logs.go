package main

import (
	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/stopsignal"
)

func newLogsCmd() *cobra.Command {
	var (
		cfgPath, host, service, remoteBinary string
		follow                               bool
	)
	cmd := &cobra.Command{
		Use:   "logs --config FILE --host H --service S [-f]",
		Short: "Print a service's output on a host (process log file, or docker logs), -f to follow",
		Long: `logs prints what service S wrote on host H: with the process runtime, its log under the
host's state dir (every start is marked by a "== zero502" line); with the Docker runtime, the
output of its newest container (through the docker client). A host reached over ssh is read
there (zero502 host logs). -f keeps printing new output until Ctrl-C. Exit 0; 1 when there is nothing to show; 2: bad flags or config.`,
		Example: `  zero502 logs --config examples/local.yaml --host host-a --service web
  zero502 logs --config examples/local.yaml --host host-b --service web -f`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "host", "service"); err != nil {
				return err
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			// A host or service the config does not name is a bad flag (exit 2), not nothing to
			// show: checked as stop checks its own, the message listing the valid names.
			if err := (deployer.StopTarget{Host: host, Service: service}).Check(cfg); err != nil {
				return exitCode(2, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			if err := deployer.Logs(ctx, cfg, host, service, follow, cmd.OutOrStdout(), deployer.Options{RemoteBinary: remoteBinary}); err != nil {
				return exitCode(1, err)
			}
			return nil
		},
	}
	configFlag(cmd, &cfgPath)
	f := cmd.Flags()
	f.StringVar(&host, "host", "", "the host, as the config names it (required)")
	f.StringVar(&service, "service", "", "the service, as the config names it (required)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new output until Ctrl-C")
	f.StringVar(&remoteBinary, "remote-binary", "zero502", "zero502 binary on hosts with ssh: (their logs are read there, with zero502 host logs)")
	return cmd
}
