package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/watchdog"
)

func newHostLockPathCmd() *cobra.Command {
	var cfgPath, name string
	cmd := &cobra.Command{
		Use:   "lock-path --config FILE [--host NAME]",
		Short: "Print each host's lock file: the one lock its deploy, its watchdog and flock(1) scripts share",
		Long: `lock-path prints the lock file of each host of the config (or of --host NAME): hosts[].lock_path,
else deploy.lock in the host's own state_dir, else watchdog.lock_path. A deploy holds it for the
host's whole step, the watchdog skips its tick while it is held, and a script keeps both away
with flock(1) on the same file. It changes nothing.`,
		Example: `  zero502 host lock-path --config examples/local.yaml
  flock "$(zero502 host lock-path --config zero502.yaml --host web-1)" ./bootstrap.sh`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			out := cmd.OutOrStdout()
			if name != "" {
				hosts, err := watchdog.Hosts(cfg, name)
				if err != nil {
					return exitCode(2, err)
				}
				fmt.Fprintln(out, cfg.HostLockPath(hosts[0]))
				return nil
			}
			if len(cfg.Hosts) == 0 {
				return exitCode(2, fmt.Errorf("config %s has no hosts; add hosts: [{name: …}]", cfgPath))
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, h := range cfg.Hosts {
				fmt.Fprintf(tw, "%s\t%s\n", h.Name, cfg.HostLockPath(h))
			}
			return tw.Flush()
		},
	}
	configFlag(cmd, &cfgPath)
	cmd.Flags().StringVar(&name, "host", "", "print only this host's lock file, bare (for flock(1) in scripts)")
	return cmd
}
