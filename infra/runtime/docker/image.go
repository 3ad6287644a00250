package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// Dockerfile is the image definition BuildImage uses: FROM scratch plus the static binary.
//
//go:embed Dockerfile
var Dockerfile []byte

// DefaultTag is the tag `zero502 image build` gives the image when none is asked for.
const DefaultTag = "zero502/app:dev"

// Module is the Go module whose cmd/zero502 is built into the image.
const Module = "github.com/zero502/zero502"

// BuildOptions says what image to build and from which binary.
type BuildOptions struct {
	// Tags name the image (repo:tag); the first is the main one. Default DefaultTag.
	Tags []string
	// Binary is a static zero502 binary to put in the image.
	Binary string
	// Source is the root of the zero502 module to build the binary from (CGO_ENABLED=0 go
	// build ./cmd/zero502) when Binary is empty.
	Source string
	// Progress receives the build's output lines; nil discards them.
	Progress io.Writer
}

// Built is what BuildImage made.
type Built struct {
	ID   string   `json:"id"`
	Tags []string `json:"tags"`
	// Binary is the binary put in the image, unless it was built for the image from Source
	// (then it is gone).
	Binary string `json:"binary,omitempty"`
	Source string `json:"source,omitempty"`
}

// BuildImage builds the zero502 image through the Engine API from a tar context holding the
// Dockerfile and the binary. The binary is opts.Binary, else one built from opts.Source, else
// this very executable when it is static, else one built from the module around the working
// directory. A dynamically linked binary is refused: FROM scratch has no C library.
func (r *Runtime) BuildImage(ctx context.Context, opts BuildOptions) (Built, error) {
	if len(opts.Tags) == 0 {
		opts.Tags = []string{DefaultTag}
	}
	for _, t := range opts.Tags {
		if t == "" || strings.ContainsAny(t, " \t") || strings.ToLower(t) != t {
			return Built{}, fmt.Errorf("tag %q: must be a lower-case image name like %s", t, DefaultTag)
		}
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	bin, src, cleanup, err := resolveBinary(ctx, opts, progress)
	if err != nil {
		return Built{}, err
	}
	defer cleanup()
	tarball, err := buildContext(bin)
	if err != nil {
		return Built{}, err
	}
	resp, err := r.cli.ImageBuild(ctx, tarball, client.ImageBuildOptions{
		Tags:        opts.Tags,
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return Built{}, r.engineErr("image build "+opts.Tags[0], err)
	}
	defer resp.Body.Close()
	id, err := readBuildStream(resp.Body, progress)
	if err != nil {
		return Built{}, fmt.Errorf("image build %s: %w", opts.Tags[0], err)
	}
	if src != "" {
		return Built{ID: id, Tags: opts.Tags, Source: src}, nil
	}
	return Built{ID: id, Tags: opts.Tags, Binary: bin}, nil
}

// RemoveImage removes an image tag (and the image once no tag is left). A missing tag is not
// an error.
func (r *Runtime) RemoveImage(ctx context.Context, tag string) error {
	_, err := r.cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{PruneChildren: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	return r.engineErr("remove image "+tag, err)
}

// resolveBinary picks the binary for the image and, when it built one, the source it built it
// from; cleanup removes a temporary build.
func resolveBinary(ctx context.Context, opts BuildOptions, progress io.Writer) (bin, src string, cleanup func(), err error) {
	noop := func() {}
	if opts.Binary != "" {
		return opts.Binary, "", noop, CheckStatic(opts.Binary)
	}
	src = opts.Source
	if src == "" {
		if self, err := os.Executable(); err == nil && CheckStatic(self) == nil {
			return self, "", noop, nil
		}
		wd, _ := os.Getwd()
		root, err := ModuleRoot(wd)
		if err != nil {
			return "", "", noop, fmt.Errorf("this zero502 binary is not static and %w; pass --binary (a CGO_ENABLED=0 build) or --source DIR", err)
		}
		src = root
	}
	dir, err := os.MkdirTemp("", "zero502-image-")
	if err != nil {
		return "", "", noop, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "zero502")
	if err := BuildBinary(ctx, src, bin, progress); err != nil {
		cleanup()
		return "", "", noop, err
	}
	return bin, src, cleanup, nil
}

// BuildBinary builds the static zero502 binary (CGO_ENABLED=0) from the module at src into out.
func BuildBinary(ctx context.Context, src, out string, progress io.Writer) error {
	fmt.Fprintf(progress, "building a static zero502 from %s (CGO_ENABLED=0 go build)\n", src)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./cmd/zero502")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/zero502 in %s: %w\n%s", src, err, msg)
	}
	return CheckStatic(out)
}

// CheckStatic refuses a binary that needs a dynamic loader: the image has nothing but it.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("binary %s: %w (it must be a linux ELF executable)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("binary %s is dynamically linked; an image FROM scratch needs a static one: "+
				"CGO_ENABLED=0 go build -o zero502 ./cmd/zero502", path)
		}
	}
	return nil
}

// ModuleRoot finds the zero502 module's root at or above dir.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(data), "module "+Module+"\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s module (go.mod) at or above %s", Module, dir)
		}
	}
}

// buildContext is the tar the engine builds from: the Dockerfile, the binary as zero502 and
// rootfs/tmp, an empty directory with mode 1777.
func buildContext(bin string) (io.Reader, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []struct {
		name string
		mode int64
	}{{"rootfs/", 0o755}, {"rootfs/tmp/", 0o1777}} {
		if err := tw.WriteHeader(&tar.Header{Name: d.name, Typeflag: tar.TypeDir, Mode: d.mode}); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{{"Dockerfile", 0o644, Dockerfile}, {"zero502", 0o755, data}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// readBuildStream copies the build output to progress and returns the image id, or the
// engine's error.
func readBuildStream(body io.Reader, progress io.Writer) (string, error) {
	id := ""
	err := readStream(body, progress, func(raw json.RawMessage) {
		var built struct {
			ID string `json:"ID"`
		}
		if json.Unmarshal(raw, &built) == nil && built.ID != "" {
			id = built.ID
		}
	})
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", errors.New("the engine reported no image id; see the build output above")
	}
	return id, nil
}
