package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
)

// Log levels and formats the long-running commands accept (--log-level, --log-format).
var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"json", "text"}
)

// logFlags are a long-running command's logging flags: --log-level always, --log-format where
// the command offers a choice (its logs are JSON otherwise).
type logFlags struct {
	level, format string
}

// addLogFlags adds --log-level (and, withFormat, --log-format) to cmd.
func addLogFlags(cmd *cobra.Command, withFormat bool) *logFlags {
	l := &logFlags{format: "json"}
	cmd.Flags().StringVar(&l.level, "log-level", "info", "least severe log lines written: debug, info, warn or error")
	if withFormat {
		cmd.Flags().StringVar(&l.format, "log-format", "json", "log format on stderr: json or text")
	}
	return l
}

// logger is the command's logger on w, or a bad-flag error (exit 2) naming the flag, the value
// and the choices.
func (l *logFlags) logger(cmd *cobra.Command, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch l.level {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, exitCode(2, fmt.Errorf("%s: --log-level %q: must be one of %v", cmd.CommandPath(), l.level, logLevels))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, exitCode(2, fmt.Errorf("%s: --log-format %q: must be one of %v", cmd.CommandPath(), l.format, logFormats))
}
