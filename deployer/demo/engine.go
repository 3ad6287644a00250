package demo

import (
	"context"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/zero502/zero502/infra/runtime/docker"
)

// Runtimes the demo runs on.
const (
	RuntimeProcess = "process" // local processes (the default)
	RuntimeDocker  = "docker"  // containers of the zero502 image on the Docker Engine
)

// engine connects to the Docker Engine at endpoint (empty: DOCKER_HOST, then the local socket)
// and makes sure image is there, building it through the Engine API (docker.BuildImage, FROM
// scratch around a static zero502) when it is missing.
func engine(ctx context.Context, endpoint, image, self string, p *progress) (*docker.Runtime, error) {
	rt, err := docker.New(endpoint)
	if err != nil {
		return nil, fmt.Errorf("demo --runtime docker: %w", err)
	}
	if err := rt.Ping(ctx); err != nil {
		rt.Close()
		return nil, fmt.Errorf("demo --runtime docker: %w", err)
	}
	_, err = rt.Client().ImageInspect(ctx, image)
	switch {
	case err == nil:
		p.line("image %s is on the engine at %s", image, rt.Client().DaemonHost())
		return rt, nil
	case !cerrdefs.IsNotFound(err):
		rt.Close()
		return nil, fmt.Errorf("demo --runtime docker: look for image %s: %w", image, err)
	}
	opts := docker.BuildOptions{Tags: []string{image}, Progress: io.Discard}
	if docker.CheckStatic(self) == nil {
		opts.Binary = self
	}
	p.line("image %s is missing: building it FROM scratch around a static zero502 (no registry)", image)
	built, err := rt.BuildImage(ctx, opts)
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("demo --runtime docker: build image %s: %w; or build it yourself: "+
			"CGO_ENABLED=0 go build -o /tmp/zero502 ./cmd/zero502 && zero502 image build --binary /tmp/zero502 --tag %s",
			image, err, image)
	}
	p.line("built image %s (%.19s)", image, built.ID)
	return rt, nil
}
