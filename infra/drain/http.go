package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Serve serves handler on ln until ctx is cancelled, then runs the drain handshake and returns
// nil once every connection is finished (or cut at the end of the shutdown budget). An error
// means the server failed before any drain (the listener broke) or the handshake is invalid.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler, hs Handshake) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	return ServeServer(ctx, srv, ln, hs)
}

// ServeServer is Serve for a caller-built http.Server (timeouts, IdleTimeout, ErrorLog): it
// wraps srv.Handler with the drain behaviour and serves srv on ln.
//
// During the window (from ctx cancelled): hs.HealthPath answers 503 "draining", every other
// request goes to the handler, new connections are accepted, and every response carries
// `Connection: close`, so keep-alive connections end after their next response (closed by the
// server after a reply, never while a client may be sending on them). After the window: the
// listener is closed, srv.Shutdown waits for in-flight requests and closes idle connections;
// when hs.Shutdown runs out, srv.Close cuts what remains.
func ServeServer(ctx context.Context, srv *http.Server, ln net.Listener, hs Handshake) error {
	hs, err := hs.prepare()
	if err != nil {
		return err
	}
	if srv.Handler == nil {
		return errors.New("drain: the http.Server has no Handler; set one (zero502 never serves http.DefaultServeMux)")
	}
	var draining atomic.Bool
	srv.Handler = drainingHandler(srv.Handler, hs.HealthPath, &draining)
	var open atomic.Int64
	trackConns(srv, &open)
	addr := ln.Addr().String()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}

	var tl timeline
	draining.Store(true)
	hs.enter(&tl, PhaseDraining, addr)
	select {
	case <-hs.Clock.After(hs.Window):
	case err := <-served:
		// The listener broke during the window: nothing more can arrive; finish what is open.
		hs.log("listener failed during the drain window; finishing in-flight now", "addr", addr, "error", err)
		served <- nil
	}

	ln.Close()
	hs.enter(&tl, PhaseStoppedAccepting, addr)
	budget, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		select {
		case <-hs.Clock.After(hs.Shutdown):
			cancel()
		case <-finished:
		}
	}()
	if err := srv.Shutdown(budget); err != nil {
		tl.cut = int(open.Load())
		srv.Close()
	}
	close(finished)
	cancel()
	<-served
	hs.enter(&tl, PhaseDone, addr)
	return nil
}

// drainingHandler answers the health path with 503 and adds Connection: close while draining.
func drainingHandler(next http.Handler, healthPath string, draining *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !draining.Load() {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if r.URL.Path == healthPath {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "draining\n")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// trackConns counts srv's open connections in open (chaining an existing ConnState hook), so the
// log can say how many the shutdown budget cut.
func trackConns(srv *http.Server, open *atomic.Int64) {
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
		if prev != nil {
			prev(c, s)
		}
	}
}
