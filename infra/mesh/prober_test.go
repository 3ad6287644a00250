package mesh

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The mesh's prober runs the one health rule: 200 passes, anything else fails with what it got,
// a redirect is not followed, and a closed port says it refused.
func TestHTTPProberRunsTheOneHealthRule(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/health", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/draining", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		path, addr, want string
	}{
		{"/health", addr, ""},
		{"/moved", addr, "GET /moved answered 301, want 200"},
		{"/draining", addr, "GET /draining answered 503, want 200"},
		{"/health", closed, "connect: connection refused"},
	} {
		err := newHTTPProber(tc.path, 2*time.Second).Probe(context.Background(), tc.addr)
		if got := errString(err); got != tc.want {
			t.Errorf("probe %s on %s: %q, want %q", tc.path, tc.addr, got, tc.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
