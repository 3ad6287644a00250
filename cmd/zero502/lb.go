package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLBCmd is a placeholder until its package lands.
func newLBCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "lb",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("lb: not built yet") },
	}
}
