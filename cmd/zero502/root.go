package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "zero502",
		Short: "Rolling deploys with no failed requests, and the traffic layer they run through",
		Long: `zero502 rolls new versions of services across servers behind a load balancer (an AWS ALB
or its own) one host at a time, draining each by the handshake: SIGTERM, /health answers 503
while the service keeps serving, the balancer takes it out, then a graceful exit. Every timing
number lives in one config file and is checked against the others (zero502 invariants).`,
		Example: `  zero502 demo                                   # the whole loop on this machine, under load
  zero502 invariants --config examples/production.yaml
  zero502 lb 8080 127.0.0.1:9001 127.0.0.1:9002 127.0.0.1:9003
  zero502 deploy --config examples/local.yaml --version v2
  zero502 status --config examples/local.yaml     # what runs where; exit 1 when it disagrees with the specs
  zero502 logs --config examples/local.yaml --host host-a --service web -f
  zero502 stop --config examples/local.yaml       # through the drain; the watchdog leaves it down

Exit status: 0 success; 1 the command's own failure (a rollout failed, an invariant violated, the
fleet disagrees with its specs); 2 bad flags, arguments or config.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newInitCmd(),
		newInvariantsCmd(),
		newLBCmd(),
		newAppCmd(),
		newDeployCmd(),
		newRollbackCmd(),
		newLockCmd(),
		newMaintenanceCmd(),
		newMeasureCmd(),
		newDemoCmd(),
		newWatchdogCmd(),
		newImageCmd(),
		newProvisionCmd(),
		newEdgeCmd(),
		newEdgePickCmd(),
		newAgentCmd(),
		newAgentServerCmd(),
		newMeshCmd(),
		newTopologyCmd(),
		newHostCmd(),
		newStatusCmd(),
		newStopCmd(),
		newLogsCmd(),
		newDNSCmd(),
	)
	root.Version = buildVersion()
	root.Flags().BoolP("version", "v", false, "print zero502's version and commit")
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	exitTwoOnUsageErrors(root)
	registerCompletions(root)
	return root
}

// configFlag adds the --config flag every fleet command shares.
func configFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVarP(path, "config", "c", "./zero502.yaml",
		"config file (YAML); ZERO502_* environment variables override its keys")
}
