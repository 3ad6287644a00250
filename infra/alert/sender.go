package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/infra/clock"
)

// DefaultAttempts is how many times a webhook is tried when Sender.Attempts is 0.
const DefaultAttempts = 5

// Sender delivers alerts. With neither URL nor Command set it only logs them.
type Sender struct {
	// URL is the webhook: each alert is POSTed to it as JSON; a 2xx answer is delivery.
	URL string
	// Command, when set, is run through sh -c with the alert's JSON on stdin (e.g. a mailer),
	// once the trust rule holds it (boundedcmd.ShellProgram: sh and the script it names) and without
	// zero502's secrets in its environment (boundedcmd.ChildEnv).
	Command string
	// Attempts bounds the webhook's tries (DefaultAttempts when 0); Backoff is the wait between
	// them (base 500 ms, cap 1 min when zero).
	Attempts int
	Backoff  backoff.Backoff
	// Timeout bounds each POST and the command (10 s when 0).
	Timeout time.Duration
	Clock   clock.Clock  // nil: clock.Real
	Logger  *slog.Logger // nil: slog.Default()
}

// Send delivers a: the webhook (retried) and the command. Both are tried; their errors are
// joined.
func (s *Sender) Send(ctx context.Context, a Alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("alert %s/%s: encode: %w", a.Subject, a.Kind, err)
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Warn("alert", "source", a.Source, "subject", a.Subject, "kind", a.Kind, "from", a.From, "summary", a.Summary,
		"suggestion", a.Suggestion)
	var errs []error
	if s.URL != "" {
		errs = append(errs, s.post(ctx, body, log))
	}
	if s.Command != "" {
		errs = append(errs, s.run(ctx, body))
	}
	return errors.Join(errs...)
}

func (s *Sender) post(ctx context.Context, body []byte, log *slog.Logger) error {
	attempts := s.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	clk := s.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	// A redirect is not followed: a 301/302 would turn the POST into a bodiless GET whose 2xx
	// counted as delivered, and a 307 to another host would carry the alert, and the webhook's
	// secret URL in Referer, there. It is a failed delivery naming its status.
	client := &http.Client{Timeout: s.timeout(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var last error
	for i := range attempts {
		if i > 0 {
			wait := s.Backoff.Delay(i - 1)
			log.Info("alert webhook: retrying", "url", Redact(s.URL), "attempt", i+1, "of", attempts, "wait", wait, "err", last)
			select {
			case <-ctx.Done():
				return fmt.Errorf("alert webhook %s: gave up when the context ended after %d attempts: %w", Redact(s.URL), i, last)
			case <-clk.After(wait):
			}
		}
		last = s.postOnce(ctx, client, body)
		if last == nil {
			return nil
		}
	}
	return fmt.Errorf("alert webhook %s: not delivered after %d attempts (raise --alert-attempts or fix the receiver): %w", Redact(s.URL), attempts, last)
}

func (s *Sender) postOnce(ctx context.Context, client *http.Client, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("bad webhook URL %s: %w", Redact(s.URL), RedactErr(err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return RedactErr(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode/100 == 3 {
		return fmt.Errorf("answered %d, a redirect (not followed: an alert goes only where it is sent); configure the URL it redirects to", resp.StatusCode)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %d: %s", resp.StatusCode, RedactAnswer(s.URL, string(bytes.TrimSpace(msg))))
	}
	return nil
}

// Validate refuses a Command the trust rule refuses (boundedcmd.ShellProgram), naming --alert-command, the
// command and why, before anything is sent.
func (s *Sender) Validate() error {
	if s.Command == "" {
		return nil
	}
	_, err := boundedcmd.ShellProgram("--alert-command", s.Command)
	return err
}

func (s *Sender) run(parent context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(parent, s.timeout())
	defer cancel()
	cmd, err := boundedcmd.ShellCommand(ctx, "--alert-command", s.Command)
	if err != nil {
		return fmt.Errorf("alert command not run: %w", err)
	}
	cmd.Stdin = bytes.NewReader(body)
	boundedcmd.Bound(cmd) // the next alert does not wait on a child it left
	if out, err := cmd.CombinedOutput(); err != nil {
		if parent.Err() == nil && ctx.Err() != nil { // killed at its timeout: "signal: killed" alone says neither
			return fmt.Errorf("alert command %q: no answer within %s (--alert-timeout), killed; check that it does not wait for input, "+
				"or raise --alert-timeout: %s", s.Command, s.timeout(), bytes.TrimSpace(out))
		}
		return fmt.Errorf("alert command %q: %w: %s", s.Command, err, bytes.TrimSpace(out))
	}
	return nil
}

func (s *Sender) timeout() time.Duration {
	if s.Timeout <= 0 {
		return 10 * time.Second
	}
	return s.Timeout
}
