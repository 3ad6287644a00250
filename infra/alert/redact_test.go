package alert

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/backoff"
)

// A webhook's path and query (its secret) appear in no log line and no error, on every retry,
// whether the receiver answers 5xx or cannot be reached: only scheme://host/… does.
func TestWebhookURLIsRedactedInLogsAndErrors(t *testing.T) {
	const secret = "T0000/B0000/s3cr3t-hook-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there: the POST fails to connect

	for _, base := range []string{srv.URL, "http://" + closed} {
		var logs bytes.Buffer
		s := &Sender{URL: base + "/services/" + secret + "?token=" + secret, Attempts: 3,
			Backoff: backoff.Backoff{Base: time.Millisecond, Cap: time.Millisecond},
			Logger:  slog.New(slog.NewTextHandler(&logs, nil))}
		err := s.Send(context.Background(), Alert{Source: "test", Subject: "b", Kind: "unreachable", At: time.Now()})
		if err == nil {
			t.Fatalf("%s: delivered to a receiver that never takes it", base)
		}
		for what, text := range map[string]string{"log": logs.String(), "error": err.Error()} {
			if strings.Contains(text, secret) {
				t.Errorf("%s: the %s holds the webhook's secret:\n%s", base, what, text)
			}
		}
		if want := base + "/…"; !strings.Contains(logs.String(), want) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want the redacted %s in the log and the error:\n%s\n%v", base, want, logs.String(), err)
		}
		if n := strings.Count(logs.String(), "retrying"); n != 2 {
			t.Errorf("%s: %d retry lines, want 2", base, n)
		}
	}
}

// An error from parsing a webhook URL (*url.Error quotes the whole URL) keeps its secret too.
func TestRedactErrHidesTheURLOfAParseError(t *testing.T) {
	const raw = "https://hooks.example.com/services/T0/B0/s3cr3t%zz"
	_, err := url.Parse(raw) //lint:ignore SA1007 the URL is bad on purpose: its parse error is what is redacted
	if err == nil {
		t.Fatal("parsed")
	}
	if got := RedactErr(err).Error(); strings.Contains(got, "s3cr3t") || !strings.Contains(got, `invalid URL escape "%zz"`) {
		t.Errorf("want the reason without the secret: %s", got)
	}
}

// A receiver whose error page quotes the request (Express's "Cannot POST /path", a proxy's
// "could not reach http://…") does not carry the webhook's secret into the log or the error:
// the answer is shown with the URL's path, query and userinfo redacted.
func TestAnAnswerQuotingTheWebhookURLIsRedacted(t *testing.T) {
	const secret = "T0000/B0000/s3cr3t-hook-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Cannot POST "+r.URL.RequestURI()+" (requested http://"+r.Host+r.URL.RequestURI()+")", http.StatusNotFound)
	}))
	defer srv.Close()
	var logs bytes.Buffer
	s := &Sender{URL: srv.URL + "/services/" + secret + "?token=" + secret, Attempts: 2,
		Backoff: backoff.Backoff{Base: time.Millisecond, Cap: time.Millisecond},
		Logger:  slog.New(slog.NewTextHandler(&logs, nil))}
	err := s.Send(context.Background(), Alert{Source: "test", Subject: "b", Kind: "unreachable", At: time.Now()})
	if err == nil {
		t.Fatal("delivered to a receiver that answers 404")
	}
	for what, text := range map[string]string{"log": logs.String(), "error": err.Error()} {
		if strings.Contains(text, "s3cr3t") {
			t.Errorf("the %s holds the webhook's secret, quoted by the receiver's answer:\n%s", what, text)
		}
	}
	if !strings.Contains(err.Error(), "answered 404") || !strings.Contains(err.Error(), "Cannot POST") {
		t.Errorf("want the answer's status and text, redacted: %v", err)
	}
}
