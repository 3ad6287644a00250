package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newInvariantsCmd is a placeholder until its package lands.
func newInvariantsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "invariants",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("invariants: not built yet") },
	}
}
