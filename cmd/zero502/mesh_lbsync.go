package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/mesh"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newMeshLBSyncCmd makes `zero502 lb` take its backends from a mesh route, through the
// balancer's admin API.
func newMeshLBSyncCmd() *cobra.Command {
	var (
		s    mesh.LBSync
		once bool
	)
	var logs *logFlags // set below, with the flags
	// The mesh key, as `mesh serve` reads it (the same --key-file and $ZERO502_MESH_KEY), with
	// this command's name in its messages.
	keySource := meshKeySource
	keySource.cmd = "mesh lb-sync"
	cmd := &cobra.Command{
		Use:   "lb-sync --from URL --admin URL [--key-file FILE] [--admin-token-file FILE] [--every D]",
		Short: "Make the in-house balancer take its backends from a mesh route (admin API only)",
		Long: `Every --every, read the mesh's GET /route from --from and bring 'zero502 lb' (its admin API at
--admin) in line: every address in rotation is added or undrained (PUT /admin/backends/ADDR), then
every server the mesh ruled out is drained (POST /admin/backends/ADDR/drain). A server the mesh
rules out leaves the balancer's rotation without a restart and comes back when it heals. A
backend this sync added that the mesh no longer lists at all is drained, then deleted
(DELETE /admin/backends/ADDR) once nothing is in flight to it; backends it did not add are never
removed. Nothing changes until the mesh's route rests on exchanged reports (its "ready"), and a
route is never empty and additions go before drains, so the balancer never has an empty pool
because of the mesh. The admin token comes from --admin-token-file or $ZERO502_LB_ADMIN_TOKEN.

The route is authenticated with the mesh key, the same as every 'mesh serve' has, from
--key-file FILE (its first line) or $ZERO502_MESH_KEY: every GET /route carries a fresh random
challenge and only an answer signed with the key for it is taken. An unsigned, wrongly signed or
replayed answer changes nothing and the round fails, saying so. Without a key lb-sync starts only
when --from is on loopback (a lab on one machine).
Exit status: 0 after SIGTERM or Ctrl-C (or after one round with --once), 1 a --once round
failed, 2 bad flags (or no key off loopback).`,
		Example: `  zero502 mesh lb-sync --from http://127.0.0.1:7001 --admin http://127.0.0.1:18081
  zero502 mesh lb-sync --from http://10.0.0.5:7946 --key-file /etc/zero502/mesh.key --admin http://10.0.0.9:18081 --admin-token-file /etc/zero502/admin-token --every 2s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "from", "admin"); err != nil {
				return err
			}
			for flag, v := range map[string]*string{"from": &s.Mesh, "admin": &s.Admin} {
				u, err := parseHTTPURL(*v)
				if err != nil {
					want := map[string]string{"from": "a mesh server's base URL, e.g. http://127.0.0.1:7001 (mesh serve's --listen, with http://)",
						"admin": "the balancer's admin base URL, e.g. http://127.0.0.1:18081"}[flag]
					return exitCode(2, fmt.Errorf("mesh lb-sync: --%s %q: must be %s: an http:// or https:// URL with a host", flag, *v, want))
				}
				*v = u
			}
			if s.Every <= 0 {
				return exitCode(2, fmt.Errorf("mesh lb-sync: --every %s: must be more than 0, e.g. 2s", s.Every))
			}
			key, keySet, err := keySource.resolve(cmd.Flags(), os.Getenv)
			if err != nil {
				return exitCode(2, err)
			}
			if keySet {
				s.Key = []byte(key)
			}
			if err := s.Validate(); err != nil {
				return exitCode(2, fmt.Errorf("mesh lb-sync: %w", err))
			}
			token, _, err := lbSyncAdminTokenSource.resolve(cmd.Flags(), os.Getenv)
			if err != nil {
				return exitCode(2, err)
			}
			s.Token = token
			if s.Logger, err = logs.logger(cmd, cmd.ErrOrStderr()); err != nil {
				return err
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			if once {
				changes, err := s.Once(ctx)
				for _, c := range changes {
					fmt.Fprintln(cmd.OutOrStdout(), c)
				}
				if err != nil {
					return exitCode(1, fmt.Errorf("mesh lb-sync: %w", err))
				}
				return nil
			}
			s.Run(ctx)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&s.Mesh, "from", "", "a mesh server's base URL, e.g. http://127.0.0.1:7001 (required)")
	fl.StringVar(&s.Admin, "admin", "", "the balancer's admin base URL, e.g. http://127.0.0.1:18081 (required)")
	keySource.register(fl, "")
	lbSyncAdminTokenSource.register(fl, "")
	fl.DurationVar(&s.Every, "every", 2*time.Second, "time between two syncs")
	fl.BoolVar(&once, "once", false, "sync once, print the changes and exit")
	logs = addLogFlags(cmd, false)
	return cmd
}
