package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCmd is a placeholder until its package lands.
func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "demo",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("demo: not built yet") },
	}
}
