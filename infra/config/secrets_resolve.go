package config

import (
	"context"

	"github.com/zero502/zero502/infra/secrets"
)

// SecretNames are the names the services' secrets list, as listed (a name two services share
// comes twice; Resolve looks each up once).
func (c *Config) SecretNames() []string {
	var names []string
	for _, s := range c.Services {
		names = append(names, s.Secrets...)
	}
	return names
}

// ResolveSecrets finds the value of every secret the services name, from secrets: (its file, its
// command, AWS Secrets Manager, the deploy job's environment), into SecretValues, and says where
// each came from (names only). Call it on the machine that runs the deploy, before anything
// changes; a config whose services name none resolves nothing and runs no command.
func (c *Config) ResolveSecrets(ctx context.Context) ([]secrets.Where, error) {
	names := c.SecretNames()
	if len(names) == 0 {
		return nil, nil
	}
	src := secrets.Sources{File: c.Secrets.File, Command: c.Secrets.Command, CommandTimeout: c.Secrets.CommandTimeout}
	if c.Secrets.AWS.Enabled {
		if SecretStoreAWS == nil {
			return nil, &FieldError{Key: "secrets.aws.enabled", Value: true,
				Rule: "needs the AWS Secrets Manager reader (package infra/secrets/secretsmanager), which this program does not include"}
		}
		src.Stores = append(src.Stores, SecretStoreAWS(c.Secrets.AWS))
	}
	vals, where, err := secrets.Resolve(ctx, names, src)
	if err != nil {
		return nil, err
	}
	c.SecretValues = vals
	return where, nil
}
