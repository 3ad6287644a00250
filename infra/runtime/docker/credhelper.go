package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	helperclient "github.com/docker/docker-credential-helpers/client"
	"github.com/docker/docker-credential-helpers/credentials"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/infra/trust"
)

// helperCredentials asks the docker credential helper docker-credential-<name> (on PATH) for
// the server's credentials, by the helper protocol the docker CLI speaks. The helper must pass
// infra/trust's program rule (a watchdog's heal may pull as root). A helper that knows no
// credentials for the server gives anonymous ones; a username of <token> means the secret is an
// identity token.
func helperCredentials(ctx context.Context, name, server string) (registrytypes.AuthConfig, error) {
	program := "docker-credential-" + name
	real, err := trust.Program(program, os.Getuid())
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return registrytypes.AuthConfig{}, fmt.Errorf("%s: %w; install %s on PATH, log in again with docker login, or remove the helper from the config",
			program, err, program)
	case err != nil:
		return registrytypes.AuthConfig{}, err
	}
	creds, err := helperclient.Get(func(args ...string) helperclient.Program {
		cmd := exec.CommandContext(ctx, real, args...)
		cmd.Args[0] = program
		boundedcmd.Bound(cmd)
		return &helperProgram{cmd: cmd}
	}, server)
	if credentials.IsErrCredentialsNotFound(err) {
		return registrytypes.AuthConfig{ServerAddress: server}, nil
	}
	if err != nil {
		return registrytypes.AuthConfig{}, fmt.Errorf("%s get %s: %w; install %s on PATH, log in again with docker login, or remove the helper from the config",
			program, server, err, program)
	}
	ac := registrytypes.AuthConfig{ServerAddress: server, Username: creds.Username, Password: creds.Secret}
	if creds.Username == "<token>" {
		ac = registrytypes.AuthConfig{ServerAddress: server, IdentityToken: creds.Secret}
	}
	return ac, nil
}

// helperProgram runs a credential helper under a context, keeping its stderr for the error.
type helperProgram struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
}

func (p *helperProgram) Input(in io.Reader) { p.cmd.Stdin = in }

func (p *helperProgram) Output() ([]byte, error) {
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.Output()
	if err != nil && p.stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(p.stderr.String()))
	}
	return out, err
}
