package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
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
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/runtime/docker"
)

// Registry is a real OCI distribution registry (go-containerregistry's, in memory) served over
// plain HTTP on 127.0.0.1:<free port>; the Docker Engine treats 127.0.0.0/8 registries as
// insecure, so it pushes to and pulls from it without TLS. With a user it answers 401 and
// WWW-Authenticate: Basic to every request without that user's password, as a registry with
// basic auth does. It records the requests it served.
type Registry struct {
	// Host is host:port, the registry part of image references: Host + "/shop/web:v1".
	Host      string
	mu        sync.Mutex
	seen      []string // "GET /v2/shop/web/manifests/v1"
	blobsLost bool
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
		lost := reg.blobsLost && strings.Contains(req.URL.Path, "/blobs/sha256:")
		reg.mu.Unlock()
		if lost {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{
				{"code": "BLOB_UNKNOWN", "message": "blob unknown to registry"}}})
			return
		}
		oci.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	reg.Host = strings.TrimPrefix(srv.URL, "http://")
	return reg
}

// LoseBlobs makes the registry answer 404 BLOB_UNKNOWN for every blob from now on while it
// still serves manifests: a pull gets past the manifest, then fails inside the engine's stream.
func (r *Registry) LoseBlobs() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobsLost = true
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

// TinyImage makes an image named ref on the engine holding one small file of random content (a
// layer no other image has), and removes the tag when the test ends.
func TinyImage(t testing.TB, rt *docker.Runtime, ref string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("dockertest " + randHex(16) + "\n")
	if err := tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rc, err := rt.Client().ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{})
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	_, _ = io.Copy(io.Discard, rc)
	rc.Close()
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })
}
