package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDeployCmd is a placeholder until its package lands.
func newDeployCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "deploy",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("deploy: not built yet") },
	}
}
