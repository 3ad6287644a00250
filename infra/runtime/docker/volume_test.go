package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// volumeImage builds testdata/volumeapp (static) and imports it as an image that declares
// VOLUME /data and holds /data/seed ("from-the-image"), as postgres' or redis' image declares
// its data directory. The tag is removed when the test ends.
func volumeImage(t *testing.T, rt *docker.Runtime) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "volumeapp")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/volumeapp")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	unlock := testmain.LockBuild()
	out, err := cmd.CombinedOutput()
	unlock()
	if err != nil {
		t.Fatalf("go build ./testdata/volumeapp: %v\n%s", err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return dockertest.Import(t, rt, []dockertest.File{
		{Name: "volumeapp", Mode: 0o755, Body: prog},
		{Name: "data/", Mode: 0o755},
		{Name: "data/seed", Mode: 0o644, Body: []byte("from-the-image\n")},
	}, `CMD ["/volumeapp"]`, "VOLUME /data")
}

// volumeService is a spec for volumeapp, published on 127.0.0.1:port.
func volumeService(image, name, version string, port int) spec.Service {
	return spec.Service{
		Name: name, Version: version, Image: image,
		Command: []string{"/volumeapp", "--port", fmt.Sprint(port), "--version", version},
		Address: fmt.Sprintf("127.0.0.1:%d", port), Port: port,
	}
}

// retire stops and removes inst, as a deploy forgets the old instance and as the watchdog's
// heal does before it starts the replacement.
func retire(t *testing.T, rt *docker.Runtime, inst runtime.Instance) {
	t.Helper()
	ctx := context.Background()
	if st, err := rt.Stop(ctx, inst, 5*time.Second); err != nil || st.ExitCode != 0 {
		t.Fatalf("stop %s: %+v, %v", inst.Version, st, err)
	}
	if err := rt.Remove(ctx, inst); err != nil {
		t.Fatalf("remove %s: %v", inst.Version, err)
	}
}

// checkVolume fails unless host has exactly the one volume of service's /data, named and
// labelled as VolumeName says, and inst mounts it at /data.
func checkVolume(t *testing.T, rt *docker.Runtime, host, service string, inst runtime.Instance) {
	t.Helper()
	ctx := context.Background()
	want := docker.VolumeName(host, service, "/data")
	vols, err := dockertest.Volumes(ctx, rt, host)
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 1 || vols[0].Name != want || vols[0].Labels[docker.LabelService] != service ||
		vols[0].Labels[docker.LabelDestination] != "/data" {
		t.Errorf("volumes of host %s: %+v; want just %s, labelled service %s and destination /data", host, vols, want, service)
	}
	c, err := inspectContainer(ctx, rt, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	var mounts []string
	for _, m := range c.Mounts {
		mounts = append(mounts, fmt.Sprintf("%s %s→%s", m.Type, m.Name, m.Destination))
	}
	if len(c.Mounts) != 1 || c.Mounts[0].Type != mount.TypeVolume || c.Mounts[0].Name != want || c.Mounts[0].Destination != "/data" {
		t.Errorf("%s's mounts %q; want just the volume %s at /data", inst.Version, mounts, want)
	}
}

// What a deploy (or a heal) does to the old container, stop and remove it before the new one
// starts, leaves the data the image's VOLUME holds: the next version finds it. The volume starts
// with the image's content at the path, as an anonymous one would, and an instance started while
// another runs (start-first) shares it.
func TestAnImagesVolumeOutlivesItsContainersAcrossDeploys(t *testing.T) {
	rt := dockertest.Engine(t)
	image := volumeImage(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)

	v1 := startApp(t, rt, host, volumeService(image, "queue", "v1", port))
	waitBody(t, fmt.Sprintf("http://127.0.0.1:%d/", port), "version v1 marker none seed from-the-image")
	checkVolume(t, rt, host, "queue", v1)

	retire(t, rt, v1)
	v2 := startApp(t, rt, host, volumeService(image, "queue", "v2", port))
	waitBody(t, fmt.Sprintf("http://127.0.0.1:%d/", port), "version v2 marker v1 seed from-the-image")
	checkVolume(t, rt, host, "queue", v2)

	// A heal of v2: the same version, its container removed before the replacement is created.
	retire(t, rt, v2)
	healed := startApp(t, rt, host, volumeService(image, "queue", "v2", port))
	waitBody(t, fmt.Sprintf("http://127.0.0.1:%d/", port), "version v2 marker v1")

	// start-first: v3 starts beside the running v2 and mounts the same volume.
	other := tcpserver.FreePort(t)
	v3 := startApp(t, rt, host, volumeService(image, "queue", "v3", other))
	waitBody(t, fmt.Sprintf("http://127.0.0.1:%d/", other), "version v3 marker v1")
	checkVolume(t, rt, host, "queue", healed)
	checkVolume(t, rt, host, "queue", v3)
}

// The local demo runs several hosts on one engine: a service's volume is the host's own.
func TestHostsOnOneEngineDoNotShareAServicesVolume(t *testing.T) {
	rt := dockertest.Engine(t)
	image := volumeImage(t, rt)
	hostA, hostB := dockertest.HostName(t, rt), dockertest.HostName(t, rt)
	portA, portB := tcpserver.FreePort(t), tcpserver.FreePort(t)

	a1 := startApp(t, rt, hostA, volumeService(image, "queue", "a1", portA))
	waitBody(t, fmt.Sprintf("http://127.0.0.1:%d/", portA), "version a1 marker none")
	startApp(t, rt, hostB, volumeService(image, "queue", "b1", portB))
	waitBody(t, fmt.Sprintf("http://127.0.0.1:%d/", portB), "version b1 marker none")

	retire(t, rt, a1)
	a2 := startApp(t, rt, hostA, volumeService(image, "queue", "a2", portA))
	waitBody(t, fmt.Sprintf("http://127.0.0.1:%d/", portA), "version a2 marker a1") // its own host's marker, not b1's
	checkVolume(t, rt, hostA, "queue", a2)
	if docker.VolumeName(hostA, "queue", "/data") == docker.VolumeName(hostB, "queue", "/data") {
		t.Fatalf("hosts %s and %s share the volume name %s", hostA, hostB, docker.VolumeName(hostA, "queue", "/data"))
	}
}

var volumeNameSyntax = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`) // Docker's

func TestVolumeNameIsStableValidAndApart(t *testing.T) {
	got := docker.VolumeName("web-1", "api", "/var/lib/postgresql/data")
	if !regexp.MustCompile(`^zero502-web-1-api-var_lib_postgresql_data-[0-9a-f]{8}$`).MatchString(got) {
		t.Errorf("VolumeName = %q, want zero502-web-1-api-var_lib_postgresql_data-<8 hex>", got)
	}
	if again := docker.VolumeName("web-1", "api", "/var/lib/postgresql/data/"); again != got {
		t.Errorf("VolumeName of the same path with a trailing slash = %q, want %q", again, got)
	}
	seen := map[string]string{}
	for _, c := range [][3]string{
		{"web-1", "api", "/data"}, {"web", "1-api", "/data"}, // alike but for where the '-' is
		{"h", "s", "/a/b"}, {"h", "s", "/a_b"}, // alike once the slash is replaced
		{"h", "s", "/data"}, {"h2", "s", "/data"}, {"h", "s2", "/data"},
		{"h ost", "s/vc", "/x y/ü"},
		{"h", "s", "/" + strings.Repeat("d", 200)},
	} {
		n := docker.VolumeName(c[0], c[1], c[2])
		if !volumeNameSyntax.MatchString(n) || len(n) > 200 {
			t.Errorf("VolumeName%q = %q: not a name Docker takes, or too long", c, n)
		}
		if prev, ok := seen[n]; ok {
			t.Errorf("VolumeName%q = %q, the same as for %s", c, n, prev)
		}
		seen[n] = fmt.Sprintf("%q", c)
	}
}
