package lb

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zero502/zero502/infra/adminapi"
)

// adminServer is the admin listener: GET /admin/backends (one: /admin/backends/{addr}), /admin/settings, /admin/health,
// /metrics and the HTML status page on / (docs/lb.md: Admin API), and the write API that adds,
// drains and removes backends and sets their weights (adminWrites), and the maintenance switch
// (adminapi.MaintenancePath); writes wait out an upgrade's hand-off (handoff.go). Who may use it is
// adminapi.Access: with a token, everything but GET /admin/health and /metrics needs it; with
// none, only a loopback listener answers, to loopback Host headers, and writes only from programs.
type adminServer struct{ srv *http.Server }

func (s *Server) serveAdmin(ln net.Listener) *adminServer {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/backends", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"backends": s.Statuses()})
	})
	mux.HandleFunc("GET /admin/backends/{addr}", func(w http.ResponseWriter, r *http.Request) {
		st, err := s.BackendStatus(r.PathValue("addr"))
		if err != nil {
			adminapi.WriteError(w, err)
			return
		}
		writeJSON(w, st)
	})
	mux.HandleFunc("GET /admin/settings", func(w http.ResponseWriter, r *http.Request) {
		v := s.set.view()
		if s.ln != nil {
			v.Listen = s.Addr()
		}
		writeJSON(w, v)
	})
	mux.HandleFunc("GET /admin/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.drainingHealth() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("draining\n"))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /{$}", s.statusPage)
	adminapi.HandleWrites(mux, "/admin/backends", adminWrites{s})
	adminapi.HandleWeightWrites(mux, "/admin/backends", adminWrites{s})
	adminapi.HandleMaintenance(mux, s)
	h := adminapi.Access{Token: s.set.AdminToken, Listen: ln.Addr().String(), Realm: "zero502 lb admin",
		Setting: "balancer.admin_token", Open: []string{"/admin/health", "/metrics"}}.Guard(s.gate.Hold(mux))
	srv := adminapi.NewServer(h, adminapi.DefaultLimits, nil)
	go func() { _ = srv.Serve(ln) }()
	return &adminServer{srv: srv}
}

func (a *adminServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
}

// Statuses is every current backend's admin view: the configured ones in order, then those the
// admin API added.
func (s *Server) Statuses() []BackendStatus {
	all := s.members.all()
	out := make([]BackendStatus, 0, len(all))
	for _, b := range all {
		out = append(out, b.Status())
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) { adminapi.WriteJSON(w, http.StatusOK, v) }
