package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/compose"
	"github.com/zero502/zero502/infra/config"
)

func newInitCmd() *cobra.Command {
	var (
		from, out string
		profiles  []string
		force     bool
	)
	cmd := &cobra.Command{
		Use:   "init --from-compose FILE [--profile NAME]... [--out zero502.yaml]",
		Short: "Write a config from a Compose file, saying key by key what zero502 does not honour",
		Long: `Read a Compose file as docker compose does (profiles: --profile, or else COMPOSE_PROFILES;
${VAR} interpolation from the environment and the .env file beside it, env_file) and write a
zero502 config a person reads and edits: each service's image, command (entrypoint first),
environment, published port, HTTP health check (a healthcheck that curls or wgets a URL), stop
signal; deploy.update_config's order and parallelism as rollout.strategy and rollout.batch; the
longest stop_grace_period as drain.stop_grace when it keeps the invariants. Every key zero502
does not honour (volumes, networks, depends_on, build, …) is a comment at the top naming the
service, the key and what to do. The written config is loaded before it is written, so it is
always one zero502 accepts; set its hosts and balancer next.
Exit status: 0 written, 1 the file exists (--force replaces it), 2 bad flags or a Compose file the
Compose loader refuses.`,
		Example: `  zero502 init --from-compose docker-compose.yml
  zero502 init --from-compose compose.yaml --profile web --out fleet.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "from-compose"); err != nil {
				return err
			}
			im, err := compose.Load(cmd.Context(), from, compose.Options{Profiles: profiles, ProfileFlag: "--profile"})
			if err != nil {
				return exitCode(2, fmt.Errorf("init: %w", err))
			}
			data, err := compose.Write(im, filepath.Base(from))
			if err != nil {
				return exitCode(1, fmt.Errorf("init: %w", err))
			}
			if _, err := config.LoadBytes(data, "the config imported from "+from); err != nil {
				return exitCode(2, fmt.Errorf("init: %s makes a config zero502 refuses: %w; fix the Compose file or write the config by hand", from, err))
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL // never through a link: O_EXCL refuses one
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
				// --force replaces a file, never what a link there points at (a link another user
				// planted in a shared directory would have the config written over any file)
				if fi, err := os.Lstat(out); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
					return exitCode(1, fmt.Errorf("init: --out %s is a symbolic link: --force replaces a file, never what a link "+
						"points at; remove the link, or give --out the file itself", out))
				}
			}
			f, err := os.OpenFile(out, flags, 0o600) // it may hold env values
			if errors.Is(err, fs.ErrExist) {
				return exitCode(1, fmt.Errorf("init: --out %s exists; pass --force to replace it", out))
			}
			if err != nil {
				return exitCode(1, fmt.Errorf("init: --out %s: %w", out, err))
			}
			if err := f.Chmod(0o600); err != nil { // a file replaced with --force keeps no wider mode
				f.Close()
				return exitCode(1, fmt.Errorf("init: chmod %s: %w", out, err))
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return exitCode(1, fmt.Errorf("init: write %s: %w", out, err))
			}
			if err := f.Close(); err != nil {
				return exitCode(1, fmt.Errorf("init: write %s: %w", out, err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d services, %d keys not honoured as Compose would (listed at its top)\n", out, len(im.Services), len(im.Notes))
			for _, n := range im.Notes {
				fmt.Fprintln(cmd.OutOrStdout(), "  "+n.String())
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from-compose", "", "the Compose file to read (required)")
	fl.StringSliceVar(&profiles, "profile", nil, "a Compose profile to enable (repeatable; replaces COMPOSE_PROFILES)")
	fl.StringVar(&out, "out", "zero502.yaml", "the config file to write (mode 0600)")
	fl.BoolVar(&force, "force", false, "replace --out if it exists")
	return cmd
}
