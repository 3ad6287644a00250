package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// maxSlow caps /slow?ms=N.
const maxSlow = 10 * time.Minute

// Handler is the app's routes; backend (host:port) goes into every response's X-Backend.
func (a *App) Handler(backend string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", a.root)
	mux.HandleFunc("/health", a.health)
	mux.HandleFunc("/orders", a.ordersRoute)
	mux.HandleFunc("/slow", a.slow)
	mux.HandleFunc("/ws", a.ws)
	version := a.opts.Version
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Version", version)
		w.Header().Set("X-Backend", backend)
		if r.URL.Path != "/health" && a.misbehave(w) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// misbehave plays a bad version (Options.FailEvery, Options.FailFor, Options.Delay) on a
// request but /health's; it reports whether it answered the request itself.
func (a *App) misbehave(w http.ResponseWriter) bool {
	if a.opts.Delay > 0 {
		time.Sleep(a.opts.Delay)
	}
	if a.opts.FailFor > 0 && a.opts.Clock.Now().Sub(a.started) < a.opts.FailFor {
		text(w, http.StatusInternalServerError, "version "+a.opts.Version+" failed this request while it warms up (--fail-for)\n")
		return true
	}
	if n := a.opts.FailEvery; n > 0 && a.served.Add(1)%uint64(n) == 0 {
		text(w, http.StatusInternalServerError, "version "+a.opts.Version+" failed this request (--fail-every)\n")
		return true
	}
	return false
}

func (a *App) root(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if !getOrHead(w, r) {
		return
	}
	text(w, http.StatusOK, "version "+a.opts.Version+"\n")
}

func (a *App) health(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if !a.healthy() {
		text(w, http.StatusServiceUnavailable, "unhealthy\n")
		return
	}
	text(w, http.StatusOK, "ok\n")
}

func (a *App) ordersRoute(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		a.placeOrder(w, r)
	case http.MethodGet, http.MethodHead:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(a.orders.list())
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		text(w, http.StatusMethodNotAllowed, "use GET to list orders or POST with an Idempotency-Key to place one\n")
	}
}

// placeOrder executes an order: one record per execution, so a retried request that the server
// executed twice shows its key twice in the log.
func (a *App) placeOrder(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		text(w, http.StatusBadRequest, "POST /orders needs an Idempotency-Key header\n")
		return
	}
	io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	// ?ms=N: the order takes N ms to process before it is recorded and answered, so a load can
	// have POSTs in flight when a deploy stops the process (the demo's naive run shows them fail).
	if q := r.URL.Query().Get("ms"); q != "" {
		d, ok := processingTime(q)
		if !ok {
			text(w, http.StatusBadRequest, fmt.Sprintf("POST /orders?ms=N needs 0 <= N <= %d, got %q\n", maxSlow.Milliseconds(), q))
			return
		}
		select {
		case <-a.opts.Clock.After(d):
		case <-r.Context().Done():
			return
		}
	}
	o := Order{Key: key, Version: a.opts.Version, At: a.opts.Clock.Now().UTC()}
	if err := a.orders.record(o); err != nil {
		a.opts.Logger.Error("order not recorded", "key", key, "error", err)
		text(w, http.StatusInternalServerError, "order not recorded: "+err.Error()+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(o)
}

func (a *App) slow(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r) {
		return
	}
	d, ok := processingTime(r.URL.Query().Get("ms"))
	if !ok {
		text(w, http.StatusBadRequest, fmt.Sprintf("/slow needs ms=N with 0 <= N <= %d, got %q\n",
			maxSlow.Milliseconds(), r.URL.Query().Get("ms")))
		return
	}
	select {
	case <-a.opts.Clock.After(d):
	case <-r.Context().Done():
		return
	}
	text(w, http.StatusOK, fmt.Sprintf("version %s slept %d ms\n", a.opts.Version, d.Milliseconds()))
}

// processingTime is ?ms=N as a duration: false unless 0 <= N <= maxSlow in ms, checked before it
// is multiplied (a huge N wrapped to a negative or small duration that passed the cap).
func processingTime(q string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(q, 10, 64)
	if err != nil || ms < 0 || ms > maxSlow.Milliseconds() {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	text(w, http.StatusMethodNotAllowed, r.Method+" not allowed here; use GET\n")
	return false
}

func text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, body)
}
