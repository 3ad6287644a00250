package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Pushed is what PushImage put in the registry.
type Pushed struct {
	Image    string `json:"image"`
	Registry string `json:"registry"`
	// Digest is the manifest's digest in the registry (sha256:…), as the engine reported it.
	Digest string `json:"digest,omitempty"`
}

// PushImage pushes the local image ref (repository:tag; :latest when untagged) to its registry
// with the credentials the docker CLI would use (the docker config file, dockerConfigPath),
// writing the engine's status lines to progress. The stream is read to its end; an error the
// engine reports in it fails the push.
func (r *Runtime) PushImage(ctx context.Context, ref string, progress io.Writer) (Pushed, error) {
	if progress == nil {
		progress = io.Discard
	}
	auth, host, err := registryAuth(ctx, ref)
	if err != nil {
		return Pushed{}, fmt.Errorf("push %s: %w", ref, err)
	}
	if _, err := r.cli.ImageInspect(ctx, ref); cerrdefs.IsNotFound(err) {
		return Pushed{}, fmt.Errorf("push %s: the engine has no image by that name: build it with zero502 image build --tag %s (or docker tag an image to it)", ref, ref)
	} else if err != nil {
		return Pushed{}, r.engineErr("push "+ref, err)
	}
	pushed := Pushed{Image: ref, Registry: host}
	body, err := r.cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: auth})
	if err == nil {
		err = readStream(body, progress, func(raw json.RawMessage) {
			var aux struct {
				Digest string `json:"Digest"`
			}
			if json.Unmarshal(raw, &aux) == nil && aux.Digest != "" {
				pushed.Digest = aux.Digest
			}
		})
		body.Close()
	}
	switch {
	case err == nil:
		return pushed, nil
	case client.IsErrConnectionFailed(err):
		return Pushed{}, fmt.Errorf("push %s: %w", ref, r.unreachable(err))
	case deniedAccess(err):
		return Pushed{}, fmt.Errorf("push %s: %w (registry %s); %s", ref, err, host, loginAdvice(host))
	default:
		return Pushed{}, fmt.Errorf("push %s: %w (registry %s); is the registry up and reachable from the engine?", ref, err, host)
	}
}
