package edge

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/standing"
)

// The edge's admin API (--admin) speaks the in-house LB's admin API over its upstreams, with the
// same wire type (adminapi.BackendStatus, in_flight being open connections) and the same write
// semantics, so one client drives both by path prefix:
//
//	GET    /admin/upstreams               {"upstreams": [BackendStatus...]}
//	GET    /admin/upstreams/{addr}        BackendStatus; unknown: 404
//	PUT    /admin/upstreams/{addr}        add (201, joining) or undrain (200); known: no-op (200)
//	POST   /admin/upstreams/{addr}/drain  admin drain (200): out of rotation, open connections go on
//	DELETE /admin/upstreams/{addr}        remove (204); in rotation: 409; unknown: 404
//
// Off loopback, every request needs Authorization: Bearer <token>. While an upgrade attempt is
// under way every write is refused 503 with Retry-After (handoff.go).
type adminEndpoint struct {
	ln  net.Listener
	srv *http.Server
}

// openAdmin listens on addr with listen; an empty addr is no admin API (nil).
func openAdmin(listen listenFunc, addr, token string, f *Forwarder) (*adminEndpoint, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("edge: admin listener on %s (--admin): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/upstreams", func(w http.ResponseWriter, r *http.Request) {
		adminapi.WriteJSON(w, http.StatusOK, map[string]any{"upstreams": f.Upstreams()})
	})
	mux.HandleFunc("GET /admin/upstreams/{addr}", func(w http.ResponseWriter, r *http.Request) {
		u := f.ups.find(r.PathValue("addr"))
		if u == nil {
			adminapi.WriteError(w, fmt.Errorf("%s: %w", r.PathValue("addr"), ErrUnknownUpstream))
			return
		}
		adminapi.WriteJSON(w, http.StatusOK, u.status())
	})
	adminapi.HandleWrites(mux, "/admin/upstreams", adminWrites{f})
	h := adminapi.Access{Token: token, Listen: ln.Addr().String(), Realm: "zero502 edge admin",
		Setting: "the token of --admin-token-file or $ZERO502_EDGE_ADMIN_TOKEN"}.Guard(f.gate.Hold(mux))
	return &adminEndpoint{ln: ln, srv: adminapi.NewServer(h, adminapi.DefaultLimits, nil)}, nil
}

func (a *adminEndpoint) addr() net.Addr {
	if a == nil {
		return nil
	}
	return a.ln.Addr()
}

func (a *adminEndpoint) serve() {
	if a == nil {
		return
	}
	go func() { _ = a.srv.Serve(a.ln) }()
}

func (a *adminEndpoint) close() {
	if a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
	_ = a.ln.Close()
}

// Upstreams is every upstream's view in the admin API's wire type: the configured ones in order,
// then those the admin API added (after Open).
func (f *Forwarder) Upstreams() []adminapi.BackendStatus {
	all := f.ups.all()
	out := make([]adminapi.BackendStatus, 0, len(all))
	for _, u := range all {
		out = append(out, u.status())
	}
	return out
}

// AddUpstream puts addr in the set, out of rotation until healthy_threshold good checks
// (created is true), or undrains one the admin API drained: it joins like a new one. Any other
// known upstream is left as it is.
func (f *Forwarder) AddUpstream(addr string) (st adminapi.BackendStatus, created bool, err error) {
	u, t, moved, created, err := f.ups.add(addr, clockOr(f.Clock).Now())
	if err != nil {
		return st, false, err
	}
	if moved {
		f.changed(u, t)
	}
	return u.status(), created, nil
}

// DrainUpstream takes addr out of rotation at once and keeps it out (checks do not bring it
// back) until AddUpstream undrains it: no new connections, open ones go on. by is who drains
// (adminapi.DrainedBy), reported as drained_by.
func (f *Forwarder) DrainUpstream(addr, by string) (adminapi.BackendStatus, error) {
	u, t, moved, err := f.ups.drain(addr, clockOr(f.Clock).Now(), by)
	if err != nil {
		return adminapi.BackendStatus{}, err
	}
	if moved {
		f.changed(u, t)
	}
	return u.status(), nil
}

// RemoveUpstream forgets addr, which must be out of rotation (drain it first): its checks stop,
// its open connections go on until they end.
func (f *Forwarder) RemoveUpstream(addr string) error {
	u, from, err := f.ups.remove(addr)
	if err != nil {
		return err
	}
	logger(f.Logger).Info("edge upstream removed", "origin", addr, "from", string(from), "to", "removed",
		"reason", standing.ReasonAdmin, "open", u.open.Load())
	return nil
}

// adminWrites are the admin write API over the edge's upstreams, adminapi's.
type adminWrites struct{ f *Forwarder }

func (a adminWrites) Add(addr string) (adminapi.BackendStatus, bool, error) {
	return a.f.AddUpstream(addr)
}
func (a adminWrites) Drain(addr, by string) (adminapi.BackendStatus, error) {
	return a.f.DrainUpstream(addr, by)
}
func (a adminWrites) Remove(addr string) error { return a.f.RemoveUpstream(addr) }
