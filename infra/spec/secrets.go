package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/zero502/zero502/infra/secrets"
	"github.com/zero502/zero502/infra/trust"
)

// SecretsPath is the file beside the spec at specPath that holds its services' secret values,
// keyed by their digests: spec.json's is spec.secrets.json. PrivateMode, its owner's alone.
func SecretsPath(specPath string) string {
	return strings.TrimSuffix(specPath, ".json") + ".secrets.json"
}

// publishWithSecrets writes s's secret values, then the spec (write), then drops the values no
// longer named. The values file holds the old spec's values and the new one's while the spec is
// replaced, so whichever spec a reader sees finds every value it names.
func publishWithSecrets(path string, s Spec, write func() error) error {
	want := map[string]string{}
	for _, svc := range s.Services {
		for name, digest := range svc.Secrets {
			v, ok := svc.SecretEnv[name]
			if digest == Unresolved || !ok {
				return fmt.Errorf("service %s: secret %s has no value (nobody resolved it): the deploy finds "+
					"secrets before it publishes a spec; nothing was published", svc.Name, name)
			}
			want[digest] = string(v)
		}
	}
	sp := SecretsPath(path)
	old, _ := readValues(sp) // unreadable or missing: nothing to keep
	if len(want) > 0 {
		both := map[string]string{}
		for d, v := range old {
			both[d] = v
		}
		for d, v := range want {
			both[d] = v
		}
		if err := writeValues(sp, both); err != nil {
			return err
		}
	}
	if err := write(); err != nil {
		return err
	}
	switch {
	case len(want) == 0:
		if err := os.Remove(sp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the secrets no spec names, %s: %w", sp, err)
		}
	case len(old) > 0:
		return writeValues(sp, want)
	}
	return nil
}

func writeValues(path string, vals map[string]string) error {
	data, err := json.Marshal(vals)
	if err != nil {
		return err
	}
	return WritePrivate(path, append(data, '\n'))
}

// readValues reads a secrets file, refusing one another user could read or write.
func readValues(path string) (map[string]string, error) {
	if err := trust.CheckPrivate(path, os.Getuid()); err != nil {
		return nil, fmt.Errorf("secrets file %w: %w", ErrUntrusted, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	if err := json.Unmarshal(data, &vals); err != nil {
		return nil, fmt.Errorf("secrets file %s is not readable: %w; publish the spec again (zero502 deploy)", path, err)
	}
	return vals, nil
}

// readSecrets fills the SecretEnv of every service of s (read from path) that names secrets,
// from the values file beside it; a value missing, or not matching its digest, is an error
// naming the service and the secret.
func readSecrets(path string, s *Spec) error {
	var vals map[string]string
	for i, svc := range s.Services {
		if len(svc.Secrets) == 0 {
			continue
		}
		if vals == nil {
			var err error
			if vals, err = readValues(SecretsPath(path)); err != nil {
				return fmt.Errorf("service %s names secrets, but their values are not readable: %w", svc.Name, err)
			}
		}
		env := map[string]secrets.Value{}
		for name, digest := range svc.Secrets {
			v, ok := vals[digest]
			if !ok || secrets.Digest(name, secrets.Value(v)) != digest {
				return fmt.Errorf("service %s: the value of secret %s is missing from %s", svc.Name, name, SecretsPath(path))
			}
			env[name] = secrets.Value(v)
		}
		s.Services[i].SecretEnv = env
	}
	return nil
}
