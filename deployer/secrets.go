package deployer

import (
	"context"
	"fmt"
	"strings"
)

// resolveSecrets finds the value of every secret the services name (config.Config.ResolveSecrets)
// on the machine running the deploy, unless the config already holds them (a host's own step
// gets them from its deployer over ssh, and never looks them up itself). The event names each
// secret and where it came from, never a value.
func (d *Deployer) resolveSecrets(ctx context.Context, version string) error {
	if len(d.cfg.SecretNames()) == 0 || d.cfg.SecretValues != nil {
		return nil
	}
	where, err := d.cfg.ResolveSecrets(ctx)
	if err != nil {
		return fmt.Errorf("%w; nothing was changed on any host", err)
	}
	var from []string
	for _, w := range where {
		from = append(from, w.Name+" from "+w.Source)
	}
	d.emit(Event{Step: stepPreflight, Version: version, Message: "secrets found: " + strings.Join(from, ", ")})
	return nil
}
