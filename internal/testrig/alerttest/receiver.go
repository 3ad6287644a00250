// Package alerttest holds a real webhook receiver for tests of what sends alerts (the platform
// monitor, the mesh): an http.Handler that decodes every alert POSTed to it and keeps them in
// order.
package alerttest

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/zero502/zero502/infra/alert"
)

// Receiver records the alerts POSTed to it; serve it with httptest.NewServer.
type Receiver struct {
	mu     sync.Mutex
	alerts []alert.Alert
}

// ServeHTTP decodes one alert; a body that is not one is answered 400.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var a alert.Alert
	if err := json.NewDecoder(req.Body).Decode(&a); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.alerts = append(r.alerts, a)
	r.mu.Unlock()
}

// List is every alert received so far as "subject kind", in order.
func (r *Receiver) List() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.alerts))
	for _, a := range r.alerts {
		out = append(out, a.Subject+" "+a.Kind)
	}
	return out
}

// Find returns the first alert of subject and kind.
func (r *Receiver) Find(subject, kind string) (alert.Alert, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.alerts {
		if a.Subject == subject && a.Kind == kind {
			return a, true
		}
	}
	return alert.Alert{}, false
}
