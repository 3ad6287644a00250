package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/runtime/docker"
)

func newImagePushCmd() *cobra.Command {
	var endpoint string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "push IMAGE",
		Short: "Push a local image to its registry with the docker CLI's credentials",
		Long: `Pushes IMAGE (registry/repository:tag, as built by zero502 image build --tag or docker tag)
from the Docker Engine to its registry. Credentials are the docker CLI's: the auths of
$DOCKER_CONFIG/config.json, else ~/.docker/config.json (what docker login writes: base64
auth or username/password), or the credential helper credHelpers or credsStore name
(docker-credential-NAME on PATH, given 30s to answer). The config must be writable by its
owner alone, and readable by its owner alone (chmod 600) when it holds the credential itself.
A registry the config does not name is pushed to anonymously. The engine's status lines go to stderr; the result to stdout. The docker
runtime pulls the same image on every host with the same credentials (services[].image).
Exit 0: pushed; 1: the push failed (the error names the registry and its answer);
2: IMAGE is not a valid reference.`,
		Example: `  zero502 image build --tag 127.0.0.1:5000/shop/web:v2 && zero502 image push 127.0.0.1:5000/shop/web:v2
  docker login registry.example.com && zero502 image push registry.example.com/shop/web:v2 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := args[0]
			if _, _, err := docker.RegistryOf(ref); err != nil {
				return exitCode(2, err)
			}
			rt, err := docker.New(endpoint)
			if err != nil {
				return exitCode(2, err)
			}
			defer rt.Close()
			pushed, err := rt.PushImage(cmd.Context(), ref, cmd.ErrOrStderr())
			if err != nil {
				return exitCode(1, err)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(pushed)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s to %s (digest %s)\n", pushed.Image, pushed.Registry, pushed.Digest)
			return nil
		},
	}
	cmd.Flags().StringVar(&endpoint, "docker-host", "", "Docker Engine endpoint (default: DOCKER_HOST, then the local socket)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
