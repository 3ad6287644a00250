package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newAppCmd is a placeholder until its package lands.
func newAppCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "app",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("app: not built yet") },
	}
}
