package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newWatchdogCmd is a placeholder until its package lands.
func newWatchdogCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "watchdog",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("watchdog: not built yet") },
	}
}
