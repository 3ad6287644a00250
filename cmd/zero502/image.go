package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/runtime/docker"
)

func newImageCmd() *cobra.Command {
	img := &cobra.Command{
		Use:   "image",
		Short: "Container images of zero502: built locally, pushed to a registry",
		Example: `  zero502 image build --tag registry.example.com/shop/web:v2
  zero502 image push registry.example.com/shop/web:v2`,
	}
	img.AddCommand(newImageBuildCmd(), newImagePushCmd())
	return img
}

func newImageBuildCmd() *cobra.Command {
	var tags []string
	var binary, source, endpoint string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "build [--tag zero502/app:dev] [--binary FILE | --source DIR]",
		Short: "Build the zero502 image FROM scratch with the static zero502 binary, through the Engine API",
		Long: `Builds the runtime image of the docker runtime: FROM scratch, nothing but a static zero502
binary at /zero502 (infra/runtime/docker/Dockerfile). The binary is --binary, else one built
from --source with CGO_ENABLED=0 by the go on PATH, else this executable when it is static,
else one built from the zero502 module around the working directory (go run in a checkout)
when it and every directory above it pass the rule of every program zero502 runs: owned by root
or this user, in directories no one else can write (a go.mod another user put above the working
directory would otherwise run in every container). That go must pass the same rule.
Services run it as, e.g.,
  /zero502 app --host 0.0.0.0 --port {port} --version {version}
(--host 0.0.0.0: inside a container the app must listen on every interface).`,
		Example: `  zero502 image build                                  # tags zero502/app:dev
  zero502 image build --tag zero502/app:v1 --tag zero502/app:v2
  CGO_ENABLED=0 go build -o /tmp/zero502 ./cmd/zero502 && zero502 image build --binary /tmp/zero502
  zero502 image build --source ~/src/zero502            # builds the static binary from that checkout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if binary != "" && source != "" {
				return exitCode(2, fmt.Errorf("--binary and --source: give one of them"))
			}
			if cmd.Flags().Changed("tag") && len(tags) == 0 {
				tags = []string{""} // --tag "": a tag, empty, not the default
			}
			for _, t := range tags {
				if err := docker.CheckTag("--tag", t); err != nil {
					return exitCode(2, err)
				}
			}
			rt, err := docker.New(endpoint)
			if err != nil {
				return exitCode(2, err)
			}
			defer rt.Close()
			opts := docker.BuildOptions{Tags: tags, Binary: binary, Source: source, Progress: cmd.ErrOrStderr()}
			built, err := rt.BuildImage(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(built)
			}
			from := "binary " + built.Binary
			if built.Source != "" {
				from = "a static build of " + built.Source
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s as %v from %s\n", built.ID, built.Tags, from)
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&tags, "tag", "t", []string{docker.DefaultTag}, "image name:tag (repeatable)")
	cmd.Flags().StringVar(&binary, "binary", "", "a static zero502 binary to put in the image")
	cmd.Flags().StringVar(&source, "source", "", "the zero502 module to build the static binary from")
	cmd.Flags().StringVar(&endpoint, "docker-host", "", "Docker Engine endpoint (default: DOCKER_HOST, then the local socket)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
