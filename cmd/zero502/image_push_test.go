package main

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"

	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
)

// importTinyImage makes a one-file image named ref on the engine (removed when the test ends).
func importTinyImage(t *testing.T, rt *docker.Runtime, ref string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("zero502 push test\n")
	if err := tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	ctx := context.Background()
	rc, err := rt.Client().ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, ref, image.ImportOptions{})
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	rc.Close()
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })
}

func TestImagePushCommandPushesToTheRegistryAndFailsClearly(t *testing.T) {
	rt := dockertest.Engine(t)
	reg := dockertest.NewRegistry(t, "", "")
	dockertest.DockerConfig(t, nil)
	ref := reg.Host + "/shop/cli:v1"
	importTinyImage(t, rt, ref)

	out, code := runCLI(t, "image", "push", ref)
	if code != 0 || !strings.Contains(out, "Pushed") || !strings.Contains(out, "pushed "+ref+" to "+reg.Host+" (digest sha256:") {
		t.Fatalf("image push: exit %d\n%s", code, out)
	}
	if reg.Served("PUT", "/v2/shop/cli/manifests/v1") != 1 {
		t.Fatalf("the registry got no manifest for shop/cli:v1: %v", reg.Requests())
	}

	out, code = runCLI(t, "image", "push", reg.Host+"/shop/cli:never-built")
	if code != 1 || !strings.Contains(out, "zero502 image build --tag "+reg.Host+"/shop/cli:never-built") {
		t.Fatalf("push of an image the engine lacks: exit %d, want 1 and how to build it\n%s", code, out)
	}
	out, code = runCLI(t, "image", "push", "Shop/Web:v1")
	if code != 2 || !strings.Contains(out, `"Shop/Web:v1"`) {
		t.Fatalf("push of an invalid reference: exit %d, want 2 naming it\n%s", code, out)
	}

	locked := dockertest.NewRegistry(t, "deploy", "s3cret")
	lockedRef := locked.Host + "/shop/cli:v1"
	importTinyImage(t, rt, lockedRef)
	out, code = runCLI(t, "image", "push", lockedRef)
	if code != 1 || !strings.Contains(out, "(registry "+locked.Host+")") || !strings.Contains(out, "docker login "+locked.Host) {
		t.Fatalf("push without credentials: exit %d, want 1 naming the registry and docker login\n%s", code, out)
	}
	if n := locked.Served("PUT", "/manifests/"); n != 0 {
		t.Fatalf("a refused push wrote %d manifests", n)
	}
}
