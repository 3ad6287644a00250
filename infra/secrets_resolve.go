package infra

import (
	"context"

	"github.com/zero502/zero502/infra/secrets"
)

// SecretNames are the names every service's secrets list, each once, in order.
func (c *Config) SecretNames() []string {
	var names []string
	for _, s := range c.Services {
		names = append(names, s.Secrets...)
	}
	return names
}

// ResolveSecrets finds the value of every secret the services name, from secrets: (its file,
// its command, the deploy job's environment), into SecretValues, and says where each came from
// (names only). Call it on the machine that runs the deploy, before anything changes; a config
// whose services name none resolves nothing and runs no command.
func (c *Config) ResolveSecrets(ctx context.Context) ([]secrets.Where, error) {
	names := c.SecretNames()
	if len(names) == 0 {
		return nil, nil
	}
	vals, where, err := secrets.Resolve(ctx, names, secrets.Sources{
		File: c.Secrets.File, Command: c.Secrets.Command, CommandTimeout: c.Secrets.CommandTimeout})
	if err != nil {
		return nil, err
	}
	c.SecretValues = vals
	return where, nil
}
