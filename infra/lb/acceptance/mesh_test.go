package acceptance

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// zero502 lb --backends-from-mesh URL follows a mesh node's GET /route through its own admin
// API: a server the mesh rules out leaves rotation without a restart (drained, not removed), it
// comes back when the mesh heals it, and the pool is never emptied by the mesh. With the mesh key
// (--mesh-key-file) it takes the route signed for its challenge, as docs/mesh.md says a node
// signs it: the bytes are computed here from the documentation, not by the mesh package.
func TestBackendsFollowTheMeshRoute(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{false, true} {
		name := "no key, on loopback"
		if keyed {
			name = "signed with the mesh key"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			followTheMeshRoute(t, keyed)
		})
	}
}

func followTheMeshRoute(t *testing.T, keyed bool) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var args []string
	if keyed {
		file := filepath.Join(t.TempDir(), "mesh.key")
		if err := os.WriteFile(file, append(key, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		args = []string{"--mesh-key-file", file}
	}
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
		body, _ := json.Marshal(route)
		challenge := r.Header.Get("X-Zero502-Mesh-Challenge")
		if keyed && challenge == "" { // an LB that ignored its key would not be given the route
			http.Error(w, "no challenge: this mesh signs its route", http.StatusForbidden)
			return
		}
		if keyed {
			m := hmac.New(sha256.New, key)
			m.Write([]byte("zero502-mesh-route-v1\n" + challenge + "\n"))
			m.Write(body)
			w.Header().Set("X-Zero502-Mesh-Signature", "v1="+hex.EncodeToString(m.Sum(nil)))
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(mesh.Close)
	l := startLB(t, bs, append([]string{"--health-interval", "200ms", "--health-timeout", "150ms", "--backends-from-mesh", mesh.URL}, args...)...)
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
