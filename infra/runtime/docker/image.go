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
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	"github.com/zero502/zero502/infra/trust"
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

// CheckTag checks t, an image name:tag given as option (tag, --tag), against the rule
// BuildImage holds every tag to: a lower-case image name, no blank in it.
func CheckTag(option, t string) error {
	if t == "" || strings.ContainsAny(t, " \t") || strings.ToLower(t) != t {
		return fmt.Errorf("%s %q: must be a lower-case image name like %s", option, t, DefaultTag)
	}
	return nil
}

// BuildImage builds the zero502 image through the Engine API from a tar context holding the
// Dockerfile and the binary. The binary is opts.Binary, else one built from opts.Source, else
// this very executable when it is static, else one built from the zero502 module around the
// working directory when it passes infra/trust's rule (moduleAround). A dynamically linked
// binary is refused: FROM scratch has no C library.
func (r *Runtime) BuildImage(ctx context.Context, opts BuildOptions) (Built, error) {
	if len(opts.Tags) == 0 {
		opts.Tags = []string{DefaultTag}
	}
	for _, t := range opts.Tags {
		if err := CheckTag("tag", t); err != nil {
			return Built{}, err
		}
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	self, _ := os.Executable()
	bin, src, cleanup, err := resolveBinary(ctx, opts, self, progress)
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
// from; cleanup removes a temporary build. self is this executable ("" when unknown), put in
// the image when neither opts.Binary nor opts.Source is given and it is static.
func resolveBinary(ctx context.Context, opts BuildOptions, self string, progress io.Writer) (bin, src string, cleanup func(), err error) {
	noop := func() {}
	if opts.Binary != "" {
		return opts.Binary, "", noop, CheckStatic(opts.Binary)
	}
	src = opts.Source
	if src == "" {
		why := errors.New("the path of this zero502 executable is not known")
		if self != "" {
			if why = CheckStatic(self); why == nil {
				return self, "", noop, nil
			}
		}
		if src, err = moduleAround(why); err != nil {
			return "", "", noop, err
		}
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

// binaryAdvice says how to give `zero502 image build` a binary when this executable will not do.
const binaryAdvice = "pass --binary FILE (a static zero502: CGO_ENABLED=0 go build -o FILE ./cmd/zero502) " +
	"or --source DIR (the zero502 module to build one from)"

// moduleAround is the zero502 module around the working directory, to build the image's binary
// from when this executable cannot go in the image (why is CheckStatic's error), as `go run
// ./cmd/zero502 demo --runtime docker` in a checkout needs. It must pass infra/trust's rule: every
// directory from / down to the working directory, and the whole module (checkModuleTree): the
// first go.mod naming the module above it may be one another user put in a directory they can
// write (a go.mod in /tmp is above every directory in it), a source another user may write is
// their code, and what it builds runs in every container. Otherwise, or with no module around,
// the error says why and what to pass instead.
func moduleAround(why error) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%w; %s", why, binaryAdvice)
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		return "", fmt.Errorf("%w, and %w; %s", why, err, binaryAdvice)
	}
	uid := os.Getuid()
	err = trust.Check(wd, uid)
	if err == nil {
		err = checkModuleTree(root, uid)
	}
	if err != nil {
		return "", fmt.Errorf("%w; the %s module at %s, around the working directory, is not one to build: %w "+
			"(what zero502 builds is held to the rule of what it runs: %s); %s", why, Module, root, err, trust.ProgramRule, binaryAdvice)
	}
	return root, nil
}

// checkModuleTree holds the module at root to infra/trust's rule, in one walk: root and every
// directory above it (trust.Check), then every directory below it and every file in them, each
// by its own Lstat (trust.CheckInfo: the walk reached it through directories that passed), a
// symlink by trust.Check of where it leads. Every file, not only the .go sources and go.mod,
// go.sum, go.work: go build compiles assembly and embeds files (defaults.yaml, the systemd units,
// the Dockerfile) into the binary. The .git and testdata directories are skipped: go build reads
// neither. The first refusal names the file and why.
func checkModuleTree(root string, uid int) error {
	if err := trust.Check(root, uid); err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == root:
			return nil
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata"):
			return fs.SkipDir
		case d.Type()&fs.ModeSymlink != 0:
			return trust.Check(p, uid)
		case !d.IsDir() && !d.Type().IsRegular():
			return nil // a socket or a fifo: nothing go build reads
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return trust.CheckInfo(p, fi, uid)
	})
}

// BuildBinary builds the static zero502 binary (CGO_ENABLED=0) from the module at src into out.
// The go it runs (on PATH) must pass infra/trust's program rule.
func BuildBinary(ctx context.Context, src, out string, progress io.Writer) error {
	goProg, err := trust.Program("go", os.Getuid())
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("go build ./cmd/zero502 in %s: %w; install Go (and put go on PATH), or pass --binary FILE, a static zero502 built elsewhere", src, err)
	case err != nil:
		return fmt.Errorf("go build ./cmd/zero502 in %s: %w; fix that go, put a trusted one first on PATH, or pass --binary FILE, a static zero502 built elsewhere", src, err)
	}
	fmt.Fprintf(progress, "building a static zero502 from %s (CGO_ENABLED=0 go build)\n", src)
	cmd := exec.CommandContext(ctx, goProg, "build", "-trimpath", "-o", out, "./cmd/zero502")
	cmd.Args[0] = "go"
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

// ModuleRoot finds the zero502 module's root at or above dir: the first go.mod naming Module.
// It judges nothing of what it finds (dockertest builds the checkout under test from it);
// BuildImage never builds from it unasked (noBinary).
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
