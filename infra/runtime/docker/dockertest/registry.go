package dockertest

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is a real OCI distribution registry (go-containerregistry's, in memory) served over
// plain HTTP on 127.0.0.1:<free port>; the Docker Engine treats 127.0.0.0/8 registries as
// insecure, so it pushes to and pulls from it without TLS. With a user it answers 401 and
// WWW-Authenticate: Basic to every request without that user's password, as a registry with
// basic auth does. It records the requests it served.
type Registry struct {
	// Host is host:port, the registry part of image references: Host + "/shop/web:v1".
	Host string
	mu   sync.Mutex
	seen []string // "GET /v2/shop/web/manifests/v1"
}

// NewRegistry starts a registry for the test, closed when it ends; user "" means anonymous
// access.
func NewRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	reg := &Registry{}
	oci := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); user != "" && (!ok || u != user || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="dockertest"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{
				{"code": "UNAUTHORIZED", "message": "authentication required"}}})
			return
		}
		reg.mu.Lock()
		reg.seen = append(reg.seen, req.Method+" "+req.URL.Path)
		reg.mu.Unlock()
		oci.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	reg.Host = strings.TrimPrefix(srv.URL, "http://")
	return reg
}

// Requests is every authorised request served so far, as "METHOD /path" lines.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// Served counts the authorised requests with this method whose path contains part, e.g.
// Served("GET", "/manifests/") for manifest fetches.
func (r *Registry) Served(method, part string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.seen {
		m, path, _ := strings.Cut(s, " ")
		if m == method && strings.Contains(path, part) {
			n++
		}
	}
	return n
}

// DockerConfig writes a docker CLI config directory whose config.json holds content (nil: no
// config.json at all), points DOCKER_CONFIG at it for the rest of the test and returns it.
func DockerConfig(t *testing.T, content any) string {
	t.Helper()
	dir := t.TempDir()
	if content != nil {
		data, err := json.Marshal(content)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DOCKER_CONFIG", dir)
	return dir
}
