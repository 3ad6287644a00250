// Package dockertest gives tests the real Docker Engine this machine runs: Engine connects (a
// test is skipped when the engine is unreachable, and fails instead when CI=true), Image builds
// the zero502 image FROM scratch once per test binary under a tag of its own (Import makes other
// images), and Main removes that tag and every container and volume of the tests' hosts when the
// run ends, or before its -timeout, and at its start whatever an earlier run whose test binary
// died left behind (stale.go).
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// suite holds what one test binary built on the engine, for Main to clean up.
type suite struct {
	mu    sync.Mutex
	once  sync.Once
	tag   string
	bin   string // the static zero502 binary in the image, kept until Main ends
	err   error
	hosts []string
}

var s suite // one per test binary: the image is built once and removed once

// Main runs the tests through testmain (o: the binary, -parallel), after removing what earlier
// runs left on the engine (containers and volumes of test hosts and test image tags whose test
// binary is no longer running: one that hit its -timeout); when the tests end, or just before this run's
// -timeout, it removes every container and volume of the hosts the tests named (HostName) and the
// image tag Image built. Call it from TestMain: os.Exit(dockertest.Main(m, testmain.Options{…})).
func Main(m *testing.M, o testmain.Options) int {
	sweepStale()
	testmain.AtExit(cleanup)
	return testmain.Run(m, o)
}

// cleanup removes this run's containers and image tag.
func cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bin != "" && s.bin != testmain.StaticBinary() {
		os.RemoveAll(filepath.Dir(s.bin))
	}
	if s.tag == "" && len(s.hosts) == 0 {
		return
	}
	rt, err := docker.New("")
	if err != nil {
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, h := range s.hosts {
		removeHost(ctx, rt, h)
	}
	if s.tag != "" {
		unlock := lockImages(ctx)
		err := rt.RemoveImage(ctx, s.tag)
		unlock()
		if err != nil {
			fmt.Fprintln(os.Stderr, "dockertest: cleanup:", err)
		}
	}
}

// Engine returns a runtime on the engine DOCKER_HOST or the local socket names. When the engine
// does not answer the test is skipped, or fails when CI=true (CI must run these tests).
func Engine(t testing.TB) *docker.Runtime {
	t.Helper()
	rt, err := docker.New("")
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = rt.Ping(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the Docker Engine is unreachable: %v", err)
		}
		t.Skipf("Docker Engine unreachable (set CI=true to make this a failure): %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// Image builds the static zero502 binary (CGO_ENABLED=0) from this module's source and the
// image FROM scratch around it, once per test binary, and returns the image's tag; Main removes
// the tag and the binary.
func Image(t testing.TB, rt *docker.Runtime) string {
	t.Helper()
	s.once.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			s.err = err
			return
		}
		root, err := docker.ModuleRoot(wd)
		if err != nil {
			s.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		bin := testmain.StaticBinary() // the package's own build, when its TestMain made one
		if bin == "" {
			dir, err := os.MkdirTemp("", "zero502-dockertest-")
			if err != nil {
				s.err = err
				return
			}
			bin = filepath.Join(dir, "zero502")
			unlock := testmain.LockBuild()
			err = docker.BuildBinary(ctx, root, bin, io.Discard)
			unlock()
			if err != nil {
				s.err = err
				return
			}
		}
		s.mu.Lock()
		s.bin = bin
		s.mu.Unlock()
		tag := Repository + ":" + owned("test-")
		unlock := lockImages(ctx) // imagelock.go
		_, err = rt.BuildImage(ctx, docker.BuildOptions{Tags: []string{tag}, Binary: bin})
		unlock()
		if err != nil {
			s.err = err
			return
		}
		s.mu.Lock()
		s.tag = tag
		s.mu.Unlock()
	})
	if s.err != nil {
		t.Fatalf("build the test image: %v", s.err)
	}
	return s.tag
}

// Repository is the repository of the image tags the tests make: Image's, and Version's.
const Repository = "zero502/app"

// Version tags the Image once more, as Repository:test-<pid>x<hex>, and returns that tag: a
// second version of the same image for a deploy from an image reference with {version} in it
// (a Compose file's). The tag is removed when the test ends, or by a later run's sweep should
// this test binary die first.
func Version(t testing.TB, rt *docker.Runtime) string {
	t.Helper()
	image := Image(t, rt)
	version := owned("test-")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := rt.Client().ImageTag(ctx, client.ImageTagOptions{Source: image, Target: Repository + ":" + version}); err != nil {
		t.Fatalf("tag %s as %s:%s: %v", image, Repository, version, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		defer lockImages(ctx)()
		_ = rt.RemoveImage(ctx, Repository+":"+version)
	})
	return version
}

// Binary is the static zero502 binary inside the Image (for the LB or a deploy run beside the
// containers); it builds the image first if needed.
func Binary(t testing.TB, rt *docker.Runtime) string {
	t.Helper()
	Image(t, rt)
	return s.bin
}

// HostName returns a host name no other test uses; every container and volume labelled with it
// is removed when the test ends (and again by Main, should a test have been killed midway).
func HostName(t testing.TB, rt *docker.Runtime) string {
	t.Helper()
	h := owned("t")
	s.mu.Lock()
	s.hosts = append(s.hosts, h)
	s.mu.Unlock()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		removeHost(ctx, rt, h)
	})
	return h
}

// removeHost force-removes every container of host and its services' network sandboxes, then
// every volume labelled with it (the named volumes of its services' image VOLUMEs, which Remove
// leaves).
func removeHost(ctx context.Context, rt *docker.Runtime, host string) {
	insts, err := rt.List(ctx, runtime.Filter{Host: host})
	if err != nil {
		return
	}
	for _, in := range insts {
		if in.Running() {
			_, _ = rt.Stop(ctx, in, 0)
		}
		_ = rt.Remove(ctx, in)
	}
	removeSandboxes(ctx, rt, func(h string) bool { return h == host })
	vols, err := Volumes(ctx, rt, host)
	if err != nil {
		return
	}
	for _, v := range vols {
		_, _ = rt.Client().VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
	}
}

// removeSandboxes force-removes the network sandboxes of the hosts gone says, returning how many.
func removeSandboxes(ctx context.Context, rt *docker.Runtime, gone func(host string) bool) int {
	sbs, err := rt.Client().ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelSandboxHost)})
	if err != nil {
		return 0
	}
	n := 0
	for _, sb := range sbs.Items {
		if gone(sb.Labels[docker.LabelSandboxHost]) {
			if _, err := rt.Client().ContainerRemove(ctx, sb.ID, client.ContainerRemoveOptions{Force: true}); err == nil {
				n++
			}
		}
	}
	return n
}

// Volumes lists the volumes labelled zero502.host=host ("": every volume with the label).
func Volumes(ctx context.Context, rt *docker.Runtime, host string) ([]volume.Volume, error) {
	label := docker.LabelHost
	if host != "" {
		label += "=" + host
	}
	res, err := rt.Client().VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", label)})
	return res.Items, err
}

// File is a file, or with a Name ending in '/' a directory, of an image Import makes.
type File struct {
	Name string // relative to the image's root: "app", "data/"
	Mode int64
	Body []byte
}

// Import makes an image of files alone (one layer, no base image) with changes applied, as
// docker import --change takes them (`CMD ["/app"]`, "VOLUME /data", "USER 65534"), tags it
// Repository:test-<pid>x<hex> and returns the tag, removed when the test ends (or by a later run's
// sweep should this test binary die first).
func Import(t testing.TB, rt *docker.Runtime, files []File, changes ...string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(f.Name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ref := Repository + ":" + owned("test-")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := rt.Client().ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: changes})
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	out, _ := io.ReadAll(rc)
	rc.Close()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = rt.RemoveImage(ctx, ref)
	})
	if _, err := rt.Client().ImageInspect(ctx, ref); err != nil {
		t.Fatalf("import %s: %v; the engine answered %s", ref, err, out)
	}
	return ref
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
