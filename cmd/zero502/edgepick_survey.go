package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zero502/zero502/infra/alert"
	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/edgepick"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newEdgePickSurveyCmd is the platform-side monitor: every edge of the name, every interval.
func newEdgePickSurveyCmd() *cobra.Command {
	var (
		name, serverName, metrics string
		interval, budget          time.Duration
		rounds                    int
		insecure, asJSON          bool
		al                        alertFlags
	)
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "survey --name HOST:PORT [--interval D] [--json] [--metrics ADDR] [--alert-webhook-file FILE]",
		Short: "Watch the edges from the platform's side: connect and handshake per edge, alert on a dead backend",
		Long: `Resolve --name through the system resolver, as the agents do (it is what real traffic uses,
so it returns the same list), and probe every address each --interval: the TCP connect time and
the full TLS handshake time from one socket. Health is judged by the handshake. Each round is a
line per edge on stdout (--json: one JSON line). With --metrics, Prometheus metrics are served on ADDR/metrics.

An edge whose TCP connect succeeds while its handshake fails is a forwarder that is up with a dead
backend: once that holds for --alert-confirm rounds in a row, one alert goes to the webhook
(--alert-webhook-file or $ZERO502_ALERT_WEBHOOK: an HTTP POST of JSON, retried with backoff) and --alert-command; one more when it recovers.
Exit status: 0 after SIGTERM, Ctrl-C or --rounds, 2 bad flags.`,
		Example: `  zero502 edgepick survey --name edge.example.com:443 --interval 30s --metrics :9102 --alert-webhook-file /etc/zero502/alert-webhook
  zero502 edgepick survey --name 127.0.0.1:8443 --insecure-skip-verify --rounds 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "name"); err != nil {
				return err
			}
			target, err := edgepick.ParseTarget(name, nil, serverName, insecure)
			if err != nil {
				return exitCode(2, fmt.Errorf("edgepick survey: %w", err))
			}
			switch {
			case interval <= 0:
				return exitCode(2, fmt.Errorf("edgepick survey: --interval %s: must be more than 0, e.g. 30s", interval))
			case budget <= 0 || budget >= interval:
				return exitCode(2, fmt.Errorf("edgepick survey: --budget %s: must be more than 0 and less than --interval %s", budget, interval))
			case rounds < 0:
				return exitCode(2, fmt.Errorf("edgepick survey: --rounds %d: must be 0 (until stopped) or more", rounds))
			}
			log, err := logs.logger(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			sender, tracker, err := al.build(log)
			if err != nil {
				return exitCode(2, fmt.Errorf("edgepick survey: %w", err))
			}
			tracker.Initial = edgepick.EdgeHealthy
			conf := &tls.Config{ServerName: target.ServerName, InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12}
			out := json.NewEncoder(cmd.OutOrStdout())
			onRound := func(r edgepick.SurveyRound) { _ = out.Encode(r) }
			if !asJSON {
				onRound = func(r edgepick.SurveyRound) { writeSurveyText(cmd.OutOrStdout(), r) }
			}
			s := &edgepick.Surveyor{Name: name, Probe: edgepick.TLSProbe(conf, budget), Interval: interval, Rounds: rounds,
				Alerts: sender, Tracker: tracker, Logger: log,
				OnRound: onRound}

			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			if metrics != "" {
				ln, err := net.Listen("tcp", metrics)
				if err != nil {
					return exitCode(2, fmt.Errorf("edgepick survey: --metrics %s: %w; pick a free address", metrics, err))
				}
				srv := &http.Server{Handler: s.MetricsHandler(), ReadHeaderTimeout: 5 * time.Second}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
				log.Info("edgepick survey: metrics", "url", "http://"+ln.Addr().String()+"/metrics")
			}
			s.Run(ctx)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&name, "name", "", "edge name host:port, resolved through the system resolver (required)")
	fl.StringVar(&serverName, "server-name", "", "name the origin's certificate is checked against (default: the host of --name)")
	fl.BoolVar(&insecure, "insecure-skip-verify", false, "do not verify the origin's certificate (labs only)")
	fl.DurationVar(&interval, "interval", 30*time.Second, "time between rounds")
	fl.DurationVar(&budget, "budget", edgepick.DefaultBudget, "per-edge probe budget: TCP connect plus full TLS handshake")
	fl.IntVar(&rounds, "rounds", 0, "stop after this many rounds (0: until stopped)")
	fl.StringVar(&metrics, "metrics", "", "serve Prometheus metrics on this address's /metrics, e.g. 127.0.0.1:9102")
	fl.BoolVar(&asJSON, "json", false, "print each round as one JSON line (default: a line per edge)")
	al.register(cmd)
	logs = addLogFlags(cmd, false)
	return cmd
}

// alertFlags are the alert flags shared by the commands that alert.
type alertFlags struct {
	// webhook comes from the webhook's secretSource (--alert-webhook-file or
	// $ZERO502_ALERT_WEBHOOK, never argv): its path is often its secret.
	webhook, command string
	source           secretSource
	cmd              *cobra.Command
	fl               *pflag.FlagSet
	attempts         int
	confirm          int
	timeout          time.Duration
}

func (a *alertFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	a.cmd, a.fl = cmd, fl
	a.source = alertWebhookSource(cmd.Name()) // its full path once cmd has its parents: build
	a.source.register(fl, "POST each alert as JSON to this http(s) URL, retried with backoff (logged as scheme://host/…)")
	fl.StringVar(&a.command, "alert-command", "", "run this through sh -c with each alert's JSON on stdin")
	fl.IntVar(&a.attempts, "alert-attempts", alert.DefaultAttempts, "webhook attempts per alert")
	fl.IntVar(&a.confirm, "alert-confirm", alert.DefaultConfirm, "observations in a row before a new state is alerted (no flapping)")
	fl.DurationVar(&a.timeout, "alert-timeout", 10*time.Second, "timeout of each webhook POST and of the command")
}

func (a *alertFlags) build(log *slog.Logger) (*alert.Sender, *alert.Tracker, error) {
	var errs []error
	if a.fl != nil {
		a.source.cmd = strings.TrimPrefix(a.cmd.CommandPath(), a.cmd.Root().Name()+" ")
		webhook, _, err := a.source.resolve(a.fl, os.Getenv)
		if err != nil {
			return nil, nil, err
		}
		a.webhook = webhook
	}
	if a.webhook != "" {
		if u, err := parseHTTPURL(a.webhook); err != nil {
			errs = append(errs, fmt.Errorf("the alert webhook %s: %w", alert.Redact(a.webhook), alert.RedactErr(err)))
		} else {
			a.webhook = u
		}
	}
	if a.attempts < 1 {
		errs = append(errs, fmt.Errorf("--alert-attempts %d: must be 1 or more", a.attempts))
	}
	if a.confirm < 1 {
		errs = append(errs, fmt.Errorf("--alert-confirm %d: must be 1 or more", a.confirm))
	}
	if a.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--alert-timeout %s: must be more than 0", a.timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	sender := &alert.Sender{URL: a.webhook, Command: a.command, Attempts: a.attempts, Timeout: a.timeout,
		Backoff: backoff.Backoff{Base: time.Second, Cap: 30 * time.Second}, Logger: log}
	if err := sender.Validate(); err != nil { // a command the trust rule refuses, before anything runs
		return nil, nil, err
	}
	return sender, &alert.Tracker{Confirm: a.confirm}, nil
}

// parseHTTPURL checks that s is an absolute http or https URL with a host.
func parseHTTPURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("must be an http:// or https:// URL with a host, e.g. https://hooks.example.com/zero502")
	}
	return u.String(), nil
}

// writeSurveyText prints a round as a line per edge.
func writeSurveyText(w io.Writer, r edgepick.SurveyRound) {
	at := r.At.Format(time.RFC3339)
	if r.Err != "" {
		fmt.Fprintf(w, "%s %s: %s\n", at, r.Name, r.Err)
	}
	for _, e := range r.Edges {
		fmt.Fprintf(w, "%s %s %s %s connect %s handshake %s", at, r.Name, e.Addr, e.State,
			edgePickDur(time.Duration(e.Connect*float64(time.Second))), edgePickDur(time.Duration(e.Handshake*float64(time.Second))))
		if e.Err != "" {
			fmt.Fprintf(w, " (%s)", e.Err)
		}
		fmt.Fprintln(w)
	}
}
