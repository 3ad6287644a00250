package config

import (
	"fmt"
	"strings"
)

// duplicateTargets refuses two hosts whose balanced service answers at the same address and port
// (same address, same port_offset): the balancer would count one server twice, and a deploy of
// one "host" would stop the other's service.
func (c *Config) duplicateTargets() []error {
	s, ok := c.BalancedService()
	if !ok {
		return nil
	}
	var errs []error
	first := map[string]int{} // target → index of the first host with it
	for i, h := range c.Hosts {
		if h.Address == "" {
			continue // refused on its own
		}
		target := strings.ToLower(h.ServiceAddr(s))
		j, seen := first[target]
		if !seen {
			first[target] = i
			continue
		}
		errs = append(errs, &FieldError{
			Key:   fmt.Sprintf("hosts[%d].address", i),
			Value: h.ServiceAddr(s),
			Rule: fmt.Sprintf("host %s and host %s (hosts[%d]) are the same balanced target (service %s on the same address and port): "+
				"every host needs its own address, or its own port_offset on a shared address", h.Name, c.Hosts[j].Name, j, s.Name),
		})
	}
	return errs
}
