package dockertest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
)

// What the tests create on the engine carries the pid of the test binary that made it: host names
// t<pid>x<hex> (so every container's and volume's zero502.host label) and image tags
// zero502/app:test-<pid>x<hex>.
// A run of any test binary removes, at its start, what a test binary that is no longer running
// left behind (it hit its -timeout, or was killed), and never what a live one still uses, so two
// runs side by side leave each other alone.
var ownedName = regexp.MustCompile(`^(?:t|test-)([0-9]+)x[0-9a-f]{8}$`)

// owned is a name for something this test binary creates: prefix, its pid, a random part.
func owned(prefix string) string {
	return fmt.Sprintf("%s%dx%s", prefix, os.Getpid(), randHex(4))
}

// stale reports whether name was made by a test binary that is no longer running.
func stale(name string) bool {
	m := ownedName.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	pid, _ := strconv.Atoi(m[1])
	if pid == os.Getpid() {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	return err != nil || !strings.HasSuffix(argv0, ".test") // a live test binary is <package>.test
}

// sweepStale removes the containers, volumes and image tags of test binaries that are gone. An
// engine that does not answer is left to Engine to report.
func sweepStale() {
	rt, err := docker.New("")
	if err != nil {
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	insts, err := rt.List(ctx, runtime.Filter{})
	if err != nil {
		return
	}
	swept := 0
	for _, in := range insts {
		if !stale(in.Host) {
			continue
		}
		if in.Running() {
			_, _ = rt.Stop(ctx, in, 0)
		}
		if rt.Remove(ctx, in) == nil {
			swept++
		}
	}
	swept += removeSandboxes(ctx, rt, stale)
	// The volumes after the containers: a volume a container still uses cannot be removed.
	if vols, err := Volumes(ctx, rt, ""); err == nil {
		for _, v := range vols {
			if !stale(v.Labels[docker.LabelHost]) {
				continue
			}
			if _, err := rt.Client().VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err == nil {
				swept++
			}
		}
	}
	unlock := lockImages(ctx) // imagelock.go
	defer unlock()
	images, err := rt.Client().ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("reference", Repository)})
	if err == nil {
		for _, img := range images.Items {
			for _, ref := range img.RepoTags {
				if tag, ok := strings.CutPrefix(ref, Repository+":"); ok && stale(tag) && rt.RemoveImage(ctx, ref) == nil {
					swept++
				}
			}
		}
	}
	if swept > 0 {
		fmt.Fprintf(os.Stderr, "dockertest: removed %d containers, volumes and image tags left by test runs that are no longer running\n", swept)
	}
}
