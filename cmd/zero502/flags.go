package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// requireFlags is a bad-flag error (exit 2) naming the first of the flags left empty.
func requireFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if v := cmd.Flags().Lookup(name).Value.String(); v == "" || v == "[]" {
			return exitCode(2, fmt.Errorf("%s: --%s is required (see --help)", cmd.CommandPath(), name))
		}
	}
	return nil
}
