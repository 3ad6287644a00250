package main

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer"
)

// zero502 host pause: the pause record of a deploy paused after its canary, on this machine, the
// lock host, for a deployer, `zero502 deploy promote` or `zero502 deploy abort` over ssh: the
// record lives beside the fleet lock, where every machine that deploys the fleet meets.
func newHostPauseCmd() *cobra.Command {
	var cfgPath, name string
	cmd := &cobra.Command{
		Use:   "pause read|write|remove --config - --host NAME",
		Short: "Read, write or remove the pause record beside the fleet lock on this host (rollout.lock_host)",
		Long: `pause reads, writes or removes the record of a deploy paused after its canary (paused.json
beside the fleet lock) on this machine, host NAME of the config, which must be its
rollout.lock_host. The deployer, zero502 deploy promote and zero502 deploy abort run it over ssh
with the config on stdin; write takes the record as JSON after the config (or on stdin with
--config FILE) and replaces the file atomically, readable by its owner alone. It prints one JSON
line: {"path": …, "pause": {…}} (read, write), {"path": …, "not_paused": true} when there is no
record (read, remove), or {"path": …, "error": "…"}. Exit 0: done; 1: failed; 2: asked wrongly.`,
		Example: `  zero502 host pause read --config zero502.yaml --host web-1
  zero502 host pause remove --config zero502.yaml --host web-1`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{deployer.PauseReadOp, deployer.PauseWriteOp, deployer.PauseRemoveOp},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, stdin, _, err := hostNamedConfig(cmd, cfgPath, name)
			if err != nil {
				return err
			}
			var record io.Reader = stdin // the config came on stdin: the record follows it
			if stdin == nil {
				record = cmd.InOrStdin()
			}
			line, err := deployer.HostPause(cfg, name, args[0], record)
			_ = json.NewEncoder(cmd.OutOrStdout()).Encode(line)
			switch {
			case errors.Is(err, deployer.ErrPauseUsage):
				return exitCode(2, nil) // the line says why
			case err != nil:
				return exitCode(1, nil)
			}
			return nil
		},
	}
	hostFlags(cmd, &cfgPath, &name, "the deployer")
	return cmd
}
