package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/logsink"
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
	h, err := l.handler(cmd, w)
	if err != nil {
		return nil, err
	}
	return slog.New(h), nil
}

// batchedLogger is logger for a service that logs a line per connection or request (the edge,
// the LB's access log): its lines reach w in batches through the returned sink (infra/logsink),
// a warning or an error at once with the lines before it. The command writes its other per-
// request output to the same sink and closes it as it returns.
func (l *logFlags) batchedLogger(cmd *cobra.Command, w io.Writer) (*slog.Logger, *logsink.Sink, error) {
	sink := logsink.New(w, 0, nil)
	h, err := l.handler(cmd, sink)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(sink.Handler(h, slog.LevelWarn)), sink, nil
}

// handler is the handler of the command's --log-level and --log-format on w.
func (l *logFlags) handler(cmd *cobra.Command, w io.Writer) (slog.Handler, error) {
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
		return slog.NewJSONHandler(w, opts), nil
	case "text":
		return slog.NewTextHandler(w, opts), nil
	}
	return nil, exitCode(2, fmt.Errorf("%s: --log-format %q: must be one of %v", cmd.CommandPath(), l.format, logFormats))
}
