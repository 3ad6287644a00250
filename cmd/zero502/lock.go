package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/printable"
)

// zero502 lock status|acquire|release: the fleet lock by hand, as `kamal lock` has.
func newLockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lock status|acquire|release --config FILE",
		Short: "Read the fleet lock, or lock the fleet against deploys for maintenance and lift it",
		Long: `The fleet lock lives on rollout.lock_host (default the first host; over ssh when it has
ssh). Every deploy holds it while it runs; lock acquire -m MSG adds a maintenance lock beside it
that refuses every deploy, naming who and why, until lock release lifts it. acquire is refused
while a deploy runs. Exit 0: done (status: the lock read); 1: refused; 2: bad flags or config.`,
		Example: `  zero502 lock status --config zero502.yaml
  zero502 lock acquire --config zero502.yaml -m "DB migration until 18:00"
  zero502 lock release --config zero502.yaml`,
	}
	for _, op := range []string{deployer.LockStatusOp, deployer.LockAcquireOp, deployer.LockReleaseOp} {
		cmd.AddCommand(newLockOpCmd(op))
	}
	return cmd
}

func newLockOpCmd(op string) *cobra.Command {
	var (
		cfgPath, message string
		asJSON           bool
		opts             deployer.Options
	)
	short := map[string]string{
		deployer.LockStatusOp:  "Say who holds the fleet lock: a running deploy, a maintenance lock, or nobody",
		deployer.LockAcquireOp: "Lock the fleet for maintenance: every deploy is refused until lock release",
		deployer.LockReleaseOp: "Lift the maintenance lock",
	}[op]
	cmd := &cobra.Command{
		Use:   op + " --config FILE",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if op == deployer.LockAcquireOp && strings.TrimSpace(message) == "" {
				return exitCode(2, fmt.Errorf("-m/--message %q: required, not blank: say why the fleet is locked, "+
					"e.g. -m \"DB migration until 18:00\"", message))
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			st, err := deployer.LockOp(cmd.Context(), cfg, op, message, opts)
			out := cmd.OutOrStdout()
			if asJSON {
				_ = json.NewEncoder(out).Encode(map[string]any{"status": st, "error": errorText(err)})
			} else if st.Path != "" {
				fmt.Fprintln(out, printable.String(st.String())) // the holder and message another user wrote
			}
			if err != nil {
				return exitCode(1, err)
			}
			return nil
		},
	}
	configFlag(cmd, &cfgPath)
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, `one JSON object: {"status": {...}, "error": "…"}`)
	f.StringVar(&opts.RemoteBinary, "remote-binary", "zero502", "zero502 binary on the lock host when it has ssh:")
	if op == deployer.LockAcquireOp {
		f.StringVarP(&message, "message", "m", "", "why the fleet is locked (required), shown to every refused deploy")
	}
	return cmd
}

// zero502 host fleet-lock: the fleet lock on this machine, the lock host, for a deployer or
// `zero502 lock` over ssh.
func newHostFleetLockCmd() *cobra.Command {
	var (
		cfgPath, name, op, holderJSON, message string
		wait                                   = deployer.DefaultLockTimeout
	)
	cmd := &cobra.Command{
		Use:   "fleet-lock --config - --host NAME [--op hold|status|acquire|release]",
		Short: "Hold the fleet lock on this host (rollout.lock_host) while the deployer's session lives",
		Long: `fleet-lock takes the fleet lock on this machine, host NAME of the config (its
rollout.lock_host), prints {"locked": PATH} (or {"refused": …}) and holds it until stdin ends:
the deployer's release, or its session's death, after which the kernel frees the flock; or until
no renewal line has come on stdin for rollout.lock_lease (a deployer cut off by a silent
partition), when it prints {"expired": …} and exits 1. With
--op status|acquire|release it does what zero502 lock does, here, and prints {"status": …}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, stdin, framed, err := hostNamedConfig(cmd, cfgPath, name)
			if err != nil {
				return err
			}
			me := deployer.Holder("zero502 host fleet-lock")
			if holderJSON != "" {
				if err := json.Unmarshal([]byte(holderJSON), &me); err != nil {
					return exitCode(2, fmt.Errorf("--holder %q: not a holder record: %w", holderJSON, err))
				}
				me = deployer.HeldHereFor(me)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			if op != "hold" {
				st, err := deployer.HostLockOp(cfg, name, op, message, me)
				_ = enc.Encode(deployer.FleetLockLine{Status: &st, Error: errorText(err)})
				if err != nil {
					return exitCode(1, nil)
				}
				return nil
			}
			var renewals io.Reader // the deployer's session: its end, and its lease renewals
			if framed {
				renewals = stdin
			}
			err = deployer.HoldFleetLock(cmd.Context(), cfg, name, me, wait == 0, wait, renewals, func(l deployer.FleetLockLine) { _ = enc.Encode(l) })
			if err != nil {
				return exitCode(1, nil) // the refused line says why
			}
			return nil
		},
	}
	hostFlags(cmd, &cfgPath, &name, "the deployer")
	f := cmd.Flags()
	f.StringVar(&op, "op", "hold", "hold (for a deploy), status, acquire or release")
	f.StringVar(&holderJSON, "holder", "", "who asks, as a holder record (JSON); default this process")
	f.StringVar(&message, "message", "", "acquire: why the fleet is locked")
	f.DurationVar(&wait, "lock-timeout", wait, "hold: how long to wait for a lock another deploy holds (0: refuse at once)")
	return cmd
}
