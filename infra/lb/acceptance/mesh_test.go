package acceptance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// zero502 lb --backends-from-mesh URL follows a mesh node's GET /route through its own admin
// API: a server the mesh rules out leaves rotation without a restart (drained, not removed), it
// comes back when the mesh heals it, and the pool is never emptied by the mesh.
func TestBackendsFollowTheMeshRoute(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	a, b, c := bs[0], bs[1], bs[2]
	var mu sync.Mutex
	out := map[string]bool{} // addresses the mesh rules out
	mesh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/route" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		type entry struct {
			Server  string `json:"server"`
			Address string `json:"address"`
			In      bool   `json:"in"`
		}
		var route struct {
			Ready     bool     `json:"ready"` // the mesh servers have exchanged reports
			Addresses []string `json:"addresses"`
			Servers   []entry  `json:"servers"`
		}
		route.Ready = true
		for i, be := range bs {
			in := !out[be.addr]
			if in {
				route.Addresses = append(route.Addresses, be.addr)
			}
			route.Servers = append(route.Servers, entry{Server: string(rune('a' + i)), Address: be.addr, In: in})
		}
		_ = json.NewEncoder(w).Encode(route)
	}))
	t.Cleanup(mesh.Close)
	l := startLB(t, bs, "--health-interval", "200ms", "--health-timeout", "150ms", "--backends-from-mesh", mesh.URL)
	l.waitInRotation(t, 10*time.Second, a, b, c)

	mu.Lock()
	out[b.addr] = true
	mu.Unlock()
	l.waitOutOfRotation(t, 10*time.Second, b)
	if st := l.status(t)[b.addr]; st.State != "draining" {
		t.Fatalf("the mesh ruled b out: state %q, want draining (drained, not removed)", st.State)
	}
	l.waitInRotation(t, 5*time.Second, a, c)

	mu.Lock()
	out[b.addr] = false
	mu.Unlock()
	l.waitInRotation(t, 10*time.Second, b)
	l.requireAlive(t)
}
