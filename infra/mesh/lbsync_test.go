package mesh

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/lb"
)

func TestLBSyncDrainsWhatTheRouteRulesOutAndNeverEmptiesTheBalancer(t *testing.T) {
	var backends []string
	for range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		t.Cleanup(s.Close)
		backends = append(backends, s.Listener.Addr().String())
	}
	var mu sync.Mutex
	rv := RouteView{Addresses: []string{backends[0]}, Servers: []RouteEntry{
		{Server: "a", Address: backends[0], In: true}, {Server: "b", Address: backends[1]}, {Server: "c", Address: backends[2]}}}
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(rv)
	}))
	defer mesh.Close()

	set := lb.LabSettings("127.0.0.1:0", backends)
	set.Admin = "127.0.0.1:0"
	srv, err := lb.New(set, lb.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx) }()
	defer func() { cancel(); <-done }()

	s := &LBSync{Mesh: mesh.URL, Admin: "http://" + srv.AdminAddr(), Every: time.Second}
	read := func() map[string]lbBackend {
		var got struct {
			Backends []lbBackend `json:"backends"`
		}
		if err := s.admin(ctx, http.MethodGet, "/admin/backends", &got); err != nil {
			t.Fatal(err)
		}
		out := map[string]lbBackend{}
		for _, b := range got.Backends {
			out[b.Address] = b
		}
		return out
	}
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got := read()
	if got[backends[0]].AdminDrained || !got[backends[1]].AdminDrained || !got[backends[2]].AdminDrained {
		t.Errorf("balancer %+v; want a kept, b and c drained", got)
	}

	mu.Lock()
	rv = RouteView{Servers: rv.Servers} // a broken mesh answering an empty route
	mu.Unlock()
	if changes, err := s.Once(ctx); err == nil || len(changes) != 0 {
		t.Errorf("an empty route: changes %v, err %v; want an error and no change", changes, err)
	}
	if read()[backends[0]].AdminDrained {
		t.Error("an empty route drained the last backend")
	}

	mu.Lock()
	rv = RouteView{Addresses: []string{backends[1], backends[2]}, Servers: rv.Servers}
	mu.Unlock()
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got = read()
	if !got[backends[0]].AdminDrained || got[backends[1]].AdminDrained || got[backends[2]].AdminDrained {
		t.Errorf("balancer %+v; want b and c back (undrained) before a is drained", got)
	}
}
