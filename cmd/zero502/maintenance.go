package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/printable"
)

// zero502 maintenance on|off|status: the LB's maintenance page, as `kamal app maintenance` has.
func newMaintenanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintenance on|off|status --config FILE",
		Short: "Answer every request with a maintenance page (503, Retry-After) at the LB, and stop doing so",
		Long: `maintenance on makes every instance of the in-house LB (balancer.admins, else
balancer.admin) answer every request with 503, a Retry-After header and a small page: HTML for
browsers, JSON for clients that accept application/json. Nothing reaches the services; their
health checks go on, and so do deploys (the page stays up until maintenance off). The LB's own
/_lb/health keeps answering 200, so a balancer in front keeps sending users to the page. It is
not the fleet lock: zero502 lock acquire refuses deploys and leaves traffic alone.
Exit 0: done; 1: an LB instance failed (each one's state is printed); 2: bad flags or config.`,
		Example: `  zero502 maintenance on --config zero502.yaml --message "Moving the database; back by 03:00"
  zero502 maintenance status --config zero502.yaml
  zero502 maintenance off --config zero502.yaml`,
	}
	for _, op := range []string{deployer.MaintenanceOnOp, deployer.MaintenanceOffOp, deployer.MaintenanceStatusOp} {
		cmd.AddCommand(newMaintenanceOpCmd(op))
	}
	return cmd
}

func newMaintenanceOpCmd(op string) *cobra.Command {
	var (
		cfgPath, message string
		retryAfter       time.Duration
		asJSON           bool
	)
	short := map[string]string{
		deployer.MaintenanceOnOp:     "Turn the maintenance page on at every LB instance (setting it again changes the message)",
		deployer.MaintenanceOffOp:    "Turn the maintenance page off: requests reach the services again",
		deployer.MaintenanceStatusOp: "Say whether each LB instance shows the maintenance page",
	}[op]
	cmd := &cobra.Command{
		Use:   op + " --config FILE",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			var change *adminapi.MaintenanceChange
			if op == deployer.MaintenanceOnOp {
				if !cmd.Flags().Changed("retry-after") {
					retryAfter = cfg.Balancer.MaintenanceRetryAfter
				}
				change = &adminapi.MaintenanceChange{Message: message, RetryAfter: adminapi.Duration(retryAfter)}
			}
			states, err := deployer.MaintenancePage(cmd.Context(), cfg, op, change)
			out := cmd.OutOrStdout()
			if asJSON {
				_ = json.NewEncoder(out).Encode(map[string]any{"instances": states, "error": errorText(err)})
			} else {
				for _, st := range states {
					fmt.Fprintln(out, printable.String(fmt.Sprint(st))) // what each LB answered
				}
			}
			switch {
			case errors.Is(err, adminapi.ErrBadMaintenance) || errors.Is(err, balancer.ErrNoMaintenance) && len(states) == 0:
				return exitCode(2, err)
			case err != nil:
				return exitCode(1, err)
			}
			return nil
		},
	}
	configFlag(cmd, &cfgPath)
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, `one JSON object: {"instances": [{"admin": …, "on": …}], "error": "…"}`)
	if op == deployer.MaintenanceOnOp {
		f.StringVarP(&message, "message", "m", "", "what the page says (plain text, newlines kept, at most 1000 bytes)")
		f.DurationVar(&retryAfter, "retry-after", 0, "the 503s' Retry-After, whole seconds (default balancer.maintenance_retry_after)")
	}
	return cmd
}
