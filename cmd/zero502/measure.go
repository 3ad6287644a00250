package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newMeasureCmd is a placeholder until its package lands.
func newMeasureCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "measure",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("measure: not built yet") },
	}
}
