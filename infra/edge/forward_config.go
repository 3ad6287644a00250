package edge

import (
	"fmt"

	"github.com/zero502/zero502/infra/config"
)

// ApplyConfig makes the config's edge section the defaults of `zero502 edge forward --config`:
// every setting whose flag was not given (given reports it by flag name, e.g. "check-interval")
// takes e's value, the drain (edge.drain), the upstreams (edge.origins) and the upstream check
// (edge.upstream_check.*); the flags given keep theirs. An edge section without an edge layer
// (edge.drain 0) is an error unless --drain is given.
func (f *Forwarder) ApplyConfig(e config.Edge, given func(flag string) bool) error {
	if !given("drain") {
		if !e.Configured() {
			return fmt.Errorf("edge.drain is %s, which means no edge layer; set edge.drain "+
				"(longer than edge.dns_ttl + edge.check_interval × edge.unhealthy_threshold, invariant I6) or pass --drain",
				e.Drain)
		}
		f.Drain = e.Drain
	}
	uc := e.UpstreamCheck
	for _, s := range []struct {
		flag string
		set  func()
	}{
		{"origin", func() { f.Origins = e.Origins }},
		{"check-path", func() { f.Check.Path = uc.Path }},
		{"check-interval", func() { f.Check.Interval = uc.Interval }},
		{"check-timeout", func() { f.Check.Timeout = uc.Timeout }},
		{"healthy-threshold", func() { f.Check.HealthyThreshold = uc.HealthyThreshold }},
		{"unhealthy-threshold", func() { f.Check.UnhealthyThreshold = uc.UnhealthyThreshold }},
	} {
		if !given(s.flag) {
			s.set()
		}
	}
	return nil
}
