package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/handoff"
)

// handoffFlags is a server command's side of the in-place upgrade (infra/handoff): --pid-file,
// and the Upgrader its RunE opens listeners with, reports ready to and upgrades by on SIGHUP.
type handoffFlags struct {
	pidFile string
	*handoff.Upgrader
}

// withHandoff adds --pid-file to cmd (default: name's pid file in the runtime dir) and wraps its
// RunE: the Upgrader is ready before RunE runs, closed after it, and an error RunE returns in a
// process started by an upgrade is recorded for the old process, which keeps serving.
func withHandoff(cmd *cobra.Command, name string) *handoffFlags {
	h := &handoffFlags{}
	cmd.Flags().StringVar(&h.pidFile, "pid-file", handoff.DefaultPIDFile(name, os.Getenv),
		"written with this process's pid once it serves; SIGHUP (or zero502 lb upgrade) hands the listening sockets to a new process read from disk")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		up, err := handoff.New(handoff.Options{PIDFile: h.pidFile})
		if err != nil {
			return exitCode(1, fmt.Errorf("%s: %w", c.CommandPath(), err))
		}
		h.Upgrader = up
		defer up.Close()
		err = run(c, args)
		up.Fail(err)
		return err
	}
	return h
}

// inheritedAdmin is the admin state the process that started this one by an upgrade handed over
// (adminapi.HandoffFile beside --pid-file), read by read (the balancer's adminapi.ReadHandoff):
// nil when this process was not started by an upgrade, or was handed none. The file is removed
// once read.
func (h *handoffFlags) inheritedAdmin(read func(path string, parent int) (adminapi.Handoff, bool, error)) (*adminapi.Handoff, error) {
	path := adminapi.HandoffFile(h.pidFile)
	if path == "" || !h.Inherited() {
		return nil, nil
	}
	st, ok, err := read(path, os.Getppid())
	if err != nil || !ok {
		return nil, err
	}
	_ = os.Remove(path)
	return &st, nil
}

// handAdminOver has an upgrade attempt hand the admin state over (prepare, to
// adminapi.HandoffFile beside --pid-file) and take writes again if it fails (failed). Without a
// pid file, or an admin API (admin false), there is none to hand over.
func (h *handoffFlags) handAdminOver(admin bool, prepare func(path string) error, failed func()) {
	if path := adminapi.HandoffFile(h.pidFile); path != "" && admin {
		h.OnUpgrade(func() error { return prepare(path) }, failed)
	}
}

// newLBUpgradeCmd is `zero502 lb upgrade`: SIGHUP to the LB in the pid file, then the outcome.
func newLBUpgradeCmd() *cobra.Command {
	req := handoff.Request{}
	cmd := &cobra.Command{
		Use:   "upgrade [--pid-file FILE]",
		Short: "Hand the running LB's listening sockets to a new process (new binary, reloaded config), without a gap",
		Long: `upgrade sends SIGHUP to the LB named by --pid-file and waits for the outcome. The LB starts its
executable again as it is on disk now (a replaced binary is the new version) with the same
arguments, handing it the proxy and admin listening sockets; the new process loads the config
(so changed backends and numbers take effect: a reload is an upgrade) and serves on them, and
only once it is ready does the old one drain as on SIGTERM and exit. No connection is refused
meanwhile: both hold the sockets. If the new process fails (bad config, crash, not ready within
a minute) the old one keeps serving and this command names the reason.
Exit 0: the new process serves; 1: the upgrade failed (the old process keeps serving) or no LB
runs under --pid-file; 2: bad flags.`,
		Example: `  zero502 lb upgrade
  zero502 lb upgrade --pid-file /run/zero502/lb.pid`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := req.Do(cmd.Context())
			if err != nil {
				return exitCode(1, fmt.Errorf("lb upgrade: %w", err))
			}
			if out.NewPID == 0 {
				return exitCode(1, errors.New("lb upgrade: the new process reported ready but the pid file does not name it (the old process could not learn its pid): look at both processes' logs"))
			}
			_, _ = fmt.Fprintf(cmd.OutOrStdout(), "upgraded: pid %d serves (took %s); pid %d drains and exits\n",
				out.NewPID, out.Took.Round(time.Millisecond), out.OldPID)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.PIDFile, "pid-file", handoff.DefaultPIDFile("lb", os.Getenv), "the LB's pid file (its --pid-file)")
	cmd.Flags().DurationVar(&req.Timeout, "timeout", handoff.DefaultTimeout+30*time.Second, "how long to wait for the outcome (longer than the LB's one-minute limit for a new process)")
	return cmd
}
