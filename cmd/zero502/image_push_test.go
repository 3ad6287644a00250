package main

import (
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
)

func TestImagePushCommandPushesToTheRegistryAndFailsClearly(t *testing.T) {
	rt := dockertest.Engine(t)
	reg := dockertest.NewRegistry(t, "", "")
	dockertest.DockerConfig(t, nil)
	ref := reg.Host + "/shop/cli:v1"
	dockertest.TinyImage(t, rt, ref)

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
	dockertest.TinyImage(t, rt, lockedRef)
	out, code = runCLI(t, "image", "push", lockedRef)
	if code != 1 || !strings.Contains(out, "(registry "+locked.Host+")") || !strings.Contains(out, "docker login "+locked.Host) {
		t.Fatalf("push without credentials: exit %d, want 1 naming the registry and docker login\n%s", code, out)
	}
	if n := locked.Served("PUT", "/manifests/"); n != 0 {
		t.Fatalf("a refused push wrote %d manifests", n)
	}
}
