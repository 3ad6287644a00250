package docker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// tagForRegistry tags the test image as reg.Host/shop/web:<tag> and removes that tag when the
// test ends.
func tagForRegistry(t *testing.T, rt *docker.Runtime, reg *dockertest.Registry, tag string) string {
	t.Helper()
	ref := reg.Host + "/shop/web:" + tag
	if _, err := rt.Client().ImageTag(context.Background(), client.ImageTagOptions{Source: dockertest.Image(t, rt), Target: ref}); err != nil {
		t.Fatalf("tag %s: %v", ref, err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })
	return ref
}

// untag removes the local tag ref and checks the engine no longer has it.
func untag(t *testing.T, rt *docker.Runtime, ref string) {
	t.Helper()
	ctx := context.Background()
	if err := rt.RemoveImage(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Client().ImageInspect(ctx, ref); !cerrdefs.IsNotFound(err) {
		t.Fatalf("image %s still on the engine after removing its tag: %v", ref, err)
	}
}

func TestPushImageThenEnsureImagePullsItBackAndStartRunsIt(t *testing.T) {
	rt := dockertest.Engine(t)
	reg := dockertest.NewRegistry(t, "", "")
	dockertest.DockerConfig(t, nil) // anonymous: no config.json
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := tagForRegistry(t, rt, reg, "v1")

	var out bytes.Buffer
	pushed, err := rt.PushImage(ctx, ref, &out)
	if err != nil {
		t.Fatalf("PushImage: %v\n%s", err, out.String())
	}
	if !strings.HasPrefix(pushed.Digest, "sha256:") || pushed.Registry != reg.Host {
		t.Fatalf("PushImage = %+v, want a sha256 digest and registry %s", pushed, reg.Host)
	}
	if reg.Served("PUT", "/v2/shop/web/manifests/v1") != 1 || !strings.Contains(out.String(), "Pushed") {
		t.Fatalf("the registry got no manifest PUT for shop/web:v1 (progress:\n%s)", out.String())
	}

	untag(t, rt, ref)
	if err := rt.EnsureImage(ctx, ref); err != nil {
		t.Fatalf("EnsureImage of a pushed image: %v", err)
	}
	got, err := rt.Client().ImageInspect(ctx, ref)
	if err != nil {
		t.Fatalf("after EnsureImage the engine lacks %s: %v", ref, err)
	}
	if !containsString(got.RepoDigests, reg.Host+"/shop/web@"+pushed.Digest) {
		t.Errorf("pulled image's repo digests %v lack %s/shop/web@%s", got.RepoDigests, reg.Host, pushed.Digest)
	}
	// The engine asks for the manifest (HEAD by tag, then GET by digest unless it already holds
	// those bytes from another test's pull of the same image: the engine is shared).
	if reg.Served("HEAD", "/v2/shop/web/manifests/v1")+reg.Served("GET", "/v2/shop/web/manifests/") == 0 {
		t.Fatalf("EnsureImage did not ask the registry for the pushed manifest; it served %v", reg.Requests())
	}
	served := len(reg.Requests())
	if err := rt.EnsureImage(ctx, ref); err != nil {
		t.Fatalf("EnsureImage of a present image: %v", err)
	}
	if n := len(reg.Requests()); n != served {
		t.Fatalf("EnsureImage of a present image asked the registry again: %v", reg.Requests()[served:])
	}

	// Start pulls what the engine lacks, then runs it.
	untag(t, rt, ref)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	inst := startApp(t, rt, host, appService(ref, "web", "v1", port, 300*time.Millisecond, 300*time.Millisecond))
	if !inst.Running() || inst.Version != "v1" {
		t.Fatalf("Start from the registry = %+v, want web v1 running", inst)
	}
}

func TestPullImageOfAnUnknownTagNamesImageAndRegistryAndChangesNothing(t *testing.T) {
	rt := dockertest.Engine(t)
	reg := dockertest.NewRegistry(t, "", "")
	dockertest.DockerConfig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref := reg.Host + "/shop/web:v9"

	err := rt.EnsureImage(ctx, ref)
	if err == nil {
		t.Fatalf("EnsureImage(%s) of a tag the registry lacks succeeded", ref)
	}
	t.Logf("unknown tag: %v", err)
	for _, want := range []string{"pull " + ref + ":", "(registry " + reg.Host + ")", "unknown", "zero502 image push " + ref} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	host := dockertest.HostName(t, rt)
	_, err = rt.Start(ctx, host, appService(ref, "web", "v9", tcpserver.FreePort(t), time.Second, time.Second))
	if err == nil || !strings.Contains(err.Error(), "pull "+ref) || !strings.Contains(err.Error(), "service web") {
		t.Fatalf("Start with an unknown tag = %v, want the pull error naming the service", err)
	}
	if l, err := rt.List(ctx, runtime.Filter{Host: host}); err != nil || len(l) != 0 {
		t.Fatalf("a failed pull left containers behind: %+v, %v", l, err)
	}
	if from := imagesFrom(t, rt, reg.Host); len(from) != 0 {
		t.Fatalf("a failed pull left images of registry %s on the engine: %v", reg.Host, from)
	}
}

func TestPullImageFailingInsideTheStreamSurfacesTheEngineError(t *testing.T) {
	rt := dockertest.Engine(t)
	reg := dockertest.NewRegistry(t, "", "")
	dockertest.DockerConfig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref := reg.Host + "/shop/tiny:v1"
	dockertest.TinyImage(t, rt, ref)
	if _, err := rt.PushImage(ctx, ref, nil); err != nil {
		t.Fatal(err)
	}
	untag(t, rt, ref) // its only tag: the engine loses the image and its layer

	// The registry still has the manifest, so the engine answers 200 and starts the stream;
	// the layer fetch then fails and the engine reports it inside the stream.
	reg.LoseBlobs()
	err := rt.EnsureImage(ctx, ref)
	t.Logf("blobs lost: %v", err)
	if err == nil || !strings.Contains(err.Error(), "pull "+ref+": ") || !strings.Contains(err.Error(), "(registry "+reg.Host+")") ||
		!strings.Contains(err.Error(), "unknown blob") {
		t.Fatalf("EnsureImage with the registry's blobs gone = %v, want the engine's in-stream error naming the blob, the image and the registry", err)
	}
	if strings.Contains(err.Error(), "Error response from daemon") {
		t.Fatalf("error %q came as an HTTP error; this test wants the one inside the stream", err)
	}
	if _, err := rt.Client().ImageInspect(ctx, ref); !cerrdefs.IsNotFound(err) {
		t.Fatalf("a failed pull left %s on the engine: %v", ref, err)
	}
}

func TestPullImageWithCredentialsFromTheDockerConfig(t *testing.T) {
	rt := dockertest.Engine(t)
	const user, password = "deploy", "s3cret:with-colon"
	reg := dockertest.NewRegistry(t, user, password)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := tagForRegistry(t, rt, reg, "v2")
	encoded := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	withAuth := map[string]any{"auths": map[string]any{reg.Host: map[string]string{"auth": encoded}}}

	dockertest.DockerConfig(t, nil)
	if _, err := rt.PushImage(ctx, ref, nil); err == nil || !strings.Contains(err.Error(), "docker login "+reg.Host) {
		t.Fatalf("PushImage without credentials = %v, want a refusal saying to docker login %s", err, reg.Host)
	}
	dockertest.DockerConfig(t, withAuth)
	if _, err := rt.PushImage(ctx, ref, nil); err != nil {
		t.Fatalf("PushImage with auths[%s].auth: %v", reg.Host, err)
	}
	untag(t, rt, ref)

	dockertest.DockerConfig(t, nil)
	err := rt.EnsureImage(ctx, ref)
	if err == nil {
		t.Fatal("EnsureImage without credentials pulled from a registry that wants them")
	}
	t.Logf("no credentials: %v", err)
	for _, want := range []string{"pull " + ref, "(registry " + reg.Host + ")", "docker login " + reg.Host} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := rt.Client().ImageInspect(ctx, ref); !cerrdefs.IsNotFound(err) {
		t.Fatalf("a refused pull left %s on the engine: %v", ref, err)
	}

	dockertest.DockerConfig(t, withAuth)
	if err := rt.EnsureImage(ctx, ref); err != nil {
		t.Fatalf("EnsureImage with auths[%s].auth: %v", reg.Host, err)
	}
	// The username/password form, under a key with scheme and path, as older docker logins wrote.
	untag(t, rt, ref)
	dockertest.DockerConfig(t, map[string]any{"auths": map[string]any{
		"http://" + reg.Host + "/v1/": map[string]string{"username": user, "password": password}}})
	if err := rt.EnsureImage(ctx, ref); err != nil {
		t.Fatalf("EnsureImage with username/password: %v", err)
	}
}

// imagesFrom lists the engine's images with a tag or digest in registry host (the engine is
// shared with other tests, so only the registry the test made says what the test changed).
func imagesFrom(t *testing.T, rt *docker.Runtime, host string) []string {
	t.Helper()
	imgs, err := rt.Client().ImageList(context.Background(), client.ImageListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, im := range imgs.Items {
		for _, name := range append(append([]string(nil), im.RepoTags...), im.RepoDigests...) {
			if strings.HasPrefix(name, host+"/") {
				out = append(out, fmt.Sprintf("%s %s", im.ID, name))
			}
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
