package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at build time: -ldflags "-X main.version=v1.2.3 -X main.commit=abc".
var (
	version = "dev"
	commit  = ""
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print zero502's version and commit",
		Example: "  zero502 version",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			c := commit
			if c == "" {
				c = "unknown"
				if bi, ok := debug.ReadBuildInfo(); ok {
					for _, s := range bi.Settings {
						if s.Key == "vcs.revision" {
							c = s.Value
						}
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "zero502 %s (commit %s)\n", version, c)
		},
	}
}
