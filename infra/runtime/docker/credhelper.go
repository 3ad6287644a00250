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

// helperTimeout bounds a credential helper's answer: boundedcmd.DefaultTimeout, as
// secrets.command's default (infra/secrets), the other command zero502 asks for a secret. A pull holds the host's lock and
// its context has no deadline, so a helper waiting at a prompt (a keychain to unlock) would hold
// the lock, and the deploys and heals behind it, for ever. A variable for the tests.
var helperTimeout = boundedcmd.DefaultTimeout

// helperCredentials asks the docker credential helper docker-credential-<name> (on PATH) for
// the server's credentials, by the helper protocol the docker CLI speaks. The helper must pass
// infra/trust's program rule (a watchdog's heal may pull as root), and answer within
// helperTimeout: then it is killed, with its process group (boundedcmd), and refused. A helper
// that knows no credentials for the server gives anonymous ones; a username of <token> means the
// secret is an identity token.
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
	hctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	creds, err := helperclient.Get(func(args ...string) helperclient.Program {
		cmd := exec.CommandContext(hctx, real, args...)
		cmd.Args[0] = program
		boundedcmd.Bound(cmd) // a child it leaves (a prompt) dies with it at the timeout, not later
		return &helperProgram{cmd: cmd}
	}, server)
	if err != nil && ctx.Err() == nil && errors.Is(hctx.Err(), context.DeadlineExceeded) {
		return registrytypes.AuthConfig{}, fmt.Errorf("%s get %s: no answer within %s (%w); check that it does not wait for input "+
			"(a keychain or password prompt), log in again with docker login, or remove the helper from the config",
			program, server, helperTimeout, hctx.Err())
	}
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
