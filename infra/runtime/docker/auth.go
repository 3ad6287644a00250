package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/pkg/authconfig"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/zero502/zero502/infra/trust"
)

// DockerHubServer is the key the docker CLI files Docker Hub's credentials under.
const DockerHubServer = "https://index.docker.io/v1/"

// dockerConfig is the part of the docker CLI's config.json that says where registry
// credentials are: inline in auths, or in a credential helper (credHelpers per registry, else
// credsStore for all).
type dockerConfig struct {
	Auths       map[string]authEntry `json:"auths"`
	CredsStore  string               `json:"credsStore"`
	CredHelpers map[string]string    `json:"credHelpers"`
}

// authEntry is one registry's entry in auths: auth is base64("user:password"); username and
// password may stand instead; identitytoken is an OAuth refresh token.
type authEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// holdsSecret tells whether the entry holds a credential itself, not only a marker of docker login
// with a credential helper or a bare username.
func (e authEntry) holdsSecret() bool {
	return e.Auth != "" || e.Password != "" || e.IdentityToken != "" || e.RegistryToken != ""
}

// dockerConfigPath is the docker CLI's config file: $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json.
func dockerConfigPath() (string, error) {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("docker config: %w; set DOCKER_CONFIG to the directory holding config.json", err)
	}
	return filepath.Join(home, ".docker", "config.json"), nil
}

// RegistryOf is the registry an image reference lives in (host[:port]; docker.io for names
// without one) and the server address the docker CLI files its credentials under.
func RegistryOf(ref string) (host, server string, err error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", "", fmt.Errorf("image %q: %w; want [registry/]repository[:tag|@digest], e.g. 127.0.0.1:5000/shop/web:v2", ref, err)
	}
	host = reference.Domain(named)
	if host == "docker.io" {
		return host, DockerHubServer, nil
	}
	return host, host, nil
}

// Credentials returns what the docker CLI would send to the registry server (a RegistryOf
// server address) from the config file at path: a credential helper's answer when credHelpers
// names one for the registry or credsStore is set, else the auths entry. A registry the config
// does not know, or a missing config file, gives empty (anonymous) credentials. The file names the
// helper that runs, so it must pass infra/trust's rule (no one else may write it); when the entry
// used holds a credential inline (auth, password, identitytoken or registrytoken) it must also
// be readable by its owner alone (trust.CheckPrivate, as a secrets.file must), or it is refused.
func Credentials(ctx context.Context, path, server string) (registrytypes.AuthConfig, error) {
	anonymous := registrytypes.AuthConfig{ServerAddress: server}
	f, err := trust.Open(path, os.Getuid())
	if errors.Is(err, fs.ErrNotExist) {
		return anonymous, nil
	}
	if err != nil {
		return anonymous, fmt.Errorf("docker config %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return anonymous, fmt.Errorf("docker config %s: %w", path, err)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return anonymous, fmt.Errorf("docker config %s: %w; it must be the JSON docker login writes ({\"auths\": {...}})", path, err)
	}
	host := hostOf(server)
	if helper, field := cfg.helperFor(server, host); helper != "" {
		ac, err := helperCredentials(ctx, helper, server)
		if err != nil {
			return anonymous, fmt.Errorf("docker config %s: %s %q: %w", path, field, helper, err)
		}
		return ac, nil
	}
	key, entry, ok := cfg.authFor(server, host)
	if !ok {
		return anonymous, nil
	}
	if entry.holdsSecret() {
		if err := trust.CheckPrivate(path, os.Getuid()); err != nil {
			return anonymous, fmt.Errorf("docker config %s: auths[%q] holds a credential, so the file must be readable by its owner alone: %w; "+
				"or keep the credential in a credential helper (credsStore)", path, key, err)
		}
	}
	ac := registrytypes.AuthConfig{
		Username: entry.Username, Password: entry.Password, ServerAddress: server,
		IdentityToken: entry.IdentityToken, RegistryToken: entry.RegistryToken,
	}
	if entry.Auth != "" {
		user, pass, err := decodeAuth(entry.Auth)
		if err != nil {
			return anonymous, fmt.Errorf("docker config %s: auths[%q].auth: %w", path, key, err)
		}
		ac.Username, ac.Password = user, pass
	}
	return ac, nil
}

// helperFor is the credential helper for the registry and the config field that names it.
func (c dockerConfig) helperFor(server, host string) (helper, field string) {
	for _, k := range []string{server, host} {
		if h := c.CredHelpers[k]; h != "" {
			return h, fmt.Sprintf("credHelpers[%q]", k)
		}
	}
	if c.CredsStore != "" {
		return c.CredsStore, "credsStore"
	}
	return "", ""
}

// authFor finds the auths entry of the registry: its exact key, else a key naming the same
// host (https://127.0.0.1:5000, 127.0.0.1:5000/v1/ …), as the docker CLI matches them.
func (c dockerConfig) authFor(server, host string) (string, authEntry, bool) {
	if e, ok := c.Auths[server]; ok {
		return server, e, true
	}
	for k, e := range c.Auths {
		if hostOf(k) == host {
			return k, e, true
		}
	}
	return "", authEntry{}, false
}

// hostOf strips the scheme and path from a server address: https://host:port/v1/ → host:port.
// Docker Hub's addresses all become index.docker.io.
func hostOf(server string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	s, _, _ = strings.Cut(s, "/")
	if s == "docker.io" || s == "registry-1.docker.io" {
		return "index.docker.io"
	}
	return s
}

// decodeAuth splits base64("user:password").
func decodeAuth(auth string) (user, pass string, err error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth))
	if err != nil {
		return "", "", fmt.Errorf("not base64: %w; want base64 of user:password (what docker login writes)", err)
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || user == "" {
		return "", "", errors.New("decodes to no user:password; want base64 of user:password (what docker login writes)")
	}
	return user, pass, nil
}

// registryAuth is the X-Registry-Auth header for pushing or pulling ref: the credentials the
// docker CLI would use, base64url JSON. Anonymous access sends an empty AuthConfig (the engine
// wants the header on a push).
func registryAuth(ctx context.Context, ref string) (header, host string, err error) {
	host, server, err := RegistryOf(ref)
	if err != nil {
		return "", "", err
	}
	path, err := dockerConfigPath()
	if err != nil {
		return "", host, err
	}
	ac, err := Credentials(ctx, path, server)
	if err != nil {
		return "", host, fmt.Errorf("credentials for registry %s: %w", host, err)
	}
	header, err = authconfig.Encode(ac)
	if err != nil {
		return "", host, fmt.Errorf("credentials for registry %s: %w", host, err)
	}
	return header, host, nil
}

// deniedWords are what registries and the engine say when credentials are missing or wrong.
var deniedWords = []string{"unauthorized", "authentication required", "no basic auth credentials", "denied", "401"}

// deniedAccess tells whether a pull or push failed for want of (valid) credentials; the engine
// often reports it in words inside the progress stream, not as a typed error.
func deniedAccess(err error) bool {
	if cerrdefs.IsUnauthorized(err) || cerrdefs.IsPermissionDenied(err) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, w := range deniedWords {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// loginAdvice says how to give zero502 a registry's credentials.
func loginAdvice(host string) string {
	return fmt.Sprintf("log in to it: docker login %s writes the credentials zero502 reads ($DOCKER_CONFIG/config.json, else ~/.docker/config.json)", host)
}
