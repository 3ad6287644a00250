package docker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// EnsureImage makes sure the engine has the image ref: nothing happens when it has it, else it
// is pulled from its registry (PullImage). The deployer calls it before it stops anything, so
// an image that cannot be had fails the step while the old instance still serves. A pull is
// logged (slog) with the time it took.
func (r *Runtime) EnsureImage(ctx context.Context, ref string) error {
	return r.EnsureImageWith(ctx, ref, io.Discard)
}

// EnsureImageWith is EnsureImage writing a pull's status lines, as the engine sends them, to
// progress (the deployer turns them into events: a pull that goes on is progress, one whose
// stream stops is a stall).
func (r *Runtime) EnsureImageWith(ctx context.Context, ref string, progress io.Writer) error {
	if _, _, err := RegistryOf(ref); err != nil {
		return err
	}
	_, err := r.cli.ImageInspect(ctx, ref)
	if err == nil {
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return r.engineErr("inspect image "+ref, err)
	}
	start := time.Now()
	if err := r.PullImage(ctx, ref, progress); err != nil {
		return err
	}
	slog.InfoContext(ctx, "pulled image", "image", ref, "engine", r.endpoint, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// PullImage pulls ref from its registry with the credentials the docker CLI would use (the
// docker config file, dockerConfigPath) and writes the engine's status lines to progress. The
// stream is read to its end; an error the engine reports in it fails the pull. A failed pull
// leaves the engine's images as they were. The error names the image, the engine's (and so
// the registry's) answer and the registry.
func (r *Runtime) PullImage(ctx context.Context, ref string, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	auth, host, err := registryAuth(ctx, ref)
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	body, err := r.cli.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: auth})
	if err == nil {
		err = readStream(body, progress, nil)
		body.Close()
	}
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return fmt.Errorf("pull %s: %w", ref, r.unreachable(err))
		}
		return fmt.Errorf("pull %s: %w (registry %s); %s", ref, err, host, pullAdvice(ref, host, err))
	}
	return nil
}

// pullAdvice says what to do about a failed pull, by what the engine said.
func pullAdvice(ref, host string, err error) string {
	msg := strings.ToLower(err.Error())
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(msg, w) {
				return true
			}
		}
		return false
	}
	switch {
	case deniedAccess(err):
		// Registries (Docker Hub among them) deny a repository that does not exist as one that
		// needs credentials.
		return fmt.Sprintf("%s; or, if the repository does not exist there, %s", loginAdvice(host), buildAndPush(ref))
	case cerrdefs.IsNotFound(err) || has("manifest unknown", "name unknown", "not found"):
		return "check that the tag exists there, or " + buildAndPush(ref)
	case has("no such host", "connection refused", "dial tcp", "timeout", "server gave http response"):
		return fmt.Sprintf("the engine cannot reach the registry: fix its access to %s, or, for an image that comes from no registry, build it on this engine: zero502 image build --tag %s", host, ref)
	default:
		return fmt.Sprintf("the registry's content may be incomplete: push the image again (zero502 image push %s) or check the registry", ref)
	}
}

// buildAndPush says how to put the zero502 image ref into its registry.
func buildAndPush(ref string) string {
	return fmt.Sprintf("build and push it: zero502 image build --tag %s && zero502 image push %s", ref, ref)
}
