package alert

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/backoff"
)

func TestTheTrackerAlertsEachConfirmedTransitionOnceAndNeverAFlap(t *testing.T) {
	tr := Tracker{Confirm: 2, Initial: "up"}
	var got []string
	for _, s := range []string{"up", "down", "up", "down", "up", "down", "down", "down", "down", "up", "up", "up"} {
		if x, ok := tr.Observe("b", s); ok {
			got = append(got, x.From+"→"+x.To)
		}
	}
	if want := "up→down,down→up"; strings.Join(got, ",") != want {
		t.Errorf("transitions %v, want %s (flaps ignored, standing states alerted once)", got, want)
	}
}

func TestTheWebhookIsRetriedUntilTheReceiverTakesIt(t *testing.T) {
	var mu sync.Mutex
	var tries int
	var got Alert
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		tries++
		if tries < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "alert.json")
	s := &Sender{URL: srv.URL, Command: "cat > " + out, Attempts: 4, Backoff: backoff.Backoff{Base: time.Millisecond, Cap: 5 * time.Millisecond}}
	a := Alert{Source: "test", Subject: "b", Kind: "unreachable", From: "up", Summary: "b is unreachable", At: time.Now()}
	if err := s.Send(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries != 3 || got.Subject != "b" || got.Kind != "unreachable" {
		t.Errorf("%d tries, received %+v; want the third try to deliver the alert", tries, got)
	}
	data, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(data), `"kind":"unreachable"`) {
		t.Errorf("the command got %q (%v); want the alert's JSON on stdin", data, err)
	}

	s.Attempts = 2
	tries = -10 // the receiver keeps failing
	mu.Unlock()
	err = s.Send(context.Background(), a)
	mu.Lock()
	if err == nil || !strings.Contains(err.Error(), "2 attempts") {
		t.Errorf("a receiver that keeps failing: %v; want an error after 2 attempts", err)
	}
}

// A webhook that redirects is not followed: a 302 (which would turn the POST into a bodiless GET
// whose 2xx counted as delivered) and a 307 to another host (which would carry the alert there,
// with the secret URL in Referer) are both failed deliveries naming the redirect.
func TestAWebhookRedirectIsNotFollowedAndNotADelivery(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		elsewhere = append(elsewhere, r.Method+" "+r.Header.Get("Referer"))
	}))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/collect", code)
		}))
		s := &Sender{URL: srv.URL + "/services/T0KEN-SECRET", Attempts: 1}
		err := s.Send(context.Background(), Alert{Source: "t", Subject: "b", Kind: "unreachable", At: time.Now()})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "redirect") || strings.Contains(err.Error(), "T0KEN-SECRET") {
			t.Errorf("a webhook answering %d: %v; want a failed delivery naming the redirect, the URL redacted", code, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) > 0 {
		t.Errorf("the redirect's target got %v", elsewhere)
	}
}

// The alert command's timeout bounds Send, and the next alert, even when a child of the command
// keeps its output open.
func TestTheAlertCommandTimeoutBoundsItsChildrenToo(t *testing.T) {
	s := &Sender{Command: "sleep 30; true", Timeout: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- s.Send(context.Background(), Alert{Source: "t", Subject: "b", Kind: "x"}) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") || !strings.Contains(err.Error(), "--alert-timeout") {
			t.Errorf("a command killed at its timeout: Send = %v; want an error saying it gave no answer within --alert-timeout (200ms)", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Send still running 15s after its 200ms alert timeout")
	}
}
