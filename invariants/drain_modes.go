package invariants

import "github.com/zero502/zero502/infra/config"

// drainModes are the names of cfg's services by how they leave rotation (services[].drain):
// handshake (the service drains itself after the stop signal, its health answering 503) and
// balancer (the deployer drains its target at the balancer before the signal).
func drainModes(c *config.Config) (handshake, balancer []string) {
	for _, s := range c.Services {
		if s.Drain == config.DrainBalancer {
			balancer = append(balancer, s.Name)
		} else {
			handshake = append(handshake, s.Name)
		}
	}
	return handshake, balancer
}
