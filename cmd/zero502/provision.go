package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/config"
)

func newProvisionCmd() *cobra.Command {
	var path, endpoint string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "provision",
		Short: "Make the AWS ALB target group run the config's health-check numbers (diff, then apply)",
		Long: `Reads the target group named by balancer.target_group_arn (DescribeTargetGroups,
DescribeTargetGroupAttributes), prints a table of every managed setting (field, live, config),
then applies what differs: ModifyTargetGroup (interval, timeout, healthy and unhealthy
thresholds, health path, matcher 200) and ModifyTargetGroupAttributes (deregistration delay;
slow start). It reads the group back to verify. A second run changes nothing and says so.

Values an ALB would refuse (interval 5–300s, timeout 2–120s and below the interval, thresholds
2–10, deregistration delay 0–3600s, slow start 0 or 30–900s, whole seconds) are refused before
any call to AWS. Credentials and region come from the AWS SDK's default chain (environment,
profile, web identity, instance role); balancer.region overrides the region.

Exit status: 0 applied or nothing to change, 1 an AWS call failed, 2 the config is invalid or
outside AWS's ranges (nothing was sent).`,
		Example: `  zero502 provision --config examples/production.yaml --dry-run
  zero502 provision --config examples/production.yaml
  zero502 provision --config prod.yaml --endpoint http://127.0.0.1:4566   # an ELBv2 API double
  ZERO502_ALB_ENDPOINT=http://127.0.0.1:4566 zero502 provision --config prod.yaml   # the same`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(path)
			if err != nil {
				return exitCode(2, err)
			}
			if err := alb.Check(cfg.Balancer); err != nil {
				return exitCode(2, fmt.Errorf("%s: %w", path, err))
			}
			if endpoint == "" {
				endpoint = os.Getenv(balancer.EnvALBEndpoint) // as deploy and invariants --live do
			}
			api, err := alb.NewClient(cmd.Context(), cfg.Balancer, alb.ClientOptions{Endpoint: endpoint})
			if err != nil {
				return exitCode(2, err)
			}
			diff, err := alb.Provision(cmd.Context(), api, cfg.Balancer, dryRun)
			if errors.Is(err, alb.ErrOutOfRange) {
				return exitCode(2, err)
			}
			if diff.TargetGroupARN != "" {
				var werr error
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					werr = enc.Encode(diff)
				} else {
					werr = diff.WriteTable(cmd.OutOrStdout())
				}
				if err == nil {
					err = werr
				}
			}
			return err
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the diff, change nothing")
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "ELBv2 endpoint URL instead of the regional one (a VPC endpoint, or a local API double); default $ZERO502_ALB_ENDPOINT")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the diff as JSON")
	return cmd
}
