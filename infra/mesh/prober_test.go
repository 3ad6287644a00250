package mesh

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
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

// A peer without a --peer-service is probed on its mesh /health from this server's --source, as
// its service would be: the probe is how that peer sees this server's address, and a server
// whose address is blocked there must be probed from that address, not one the kernel picks.
func TestHealthProbesLeaveFromTheSource(t *testing.T) {
	from := make(chan string, 4)
	peer, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		select {
		case from <- host:
		default:
		}
	})}
	go func() { _ = srv.Serve(peer) }()
	t.Cleanup(func() { srv.Close() })
	n := &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": peer.Addr().String()},
		Source: netip.MustParseAddr("127.0.0.3"), ProbeEvery: time.Second, ProbeTimeout: 500 * time.Millisecond}
	if err := n.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.ln.Close() })
	if err := n.probePeer(context.Background(), "b"); err != nil {
		t.Fatalf("probe of b's /health: %v", err)
	}
	if got := <-from; got != "127.0.0.3" {
		t.Errorf("b's /health was probed from %s, want --source 127.0.0.3", got)
	}
}
