package edge

import (
	"testing"

	"github.com/zero502/zero502/infra/config"
)

// TestEdgeUpstreamCheckDefaultsAreTheForwardersOwn: the forwarder's defaults for a Forwarder
// built in code (Default*) are the shipped config's numbers, so there is one default.
func TestEdgeUpstreamCheckDefaultsAreTheForwardersOwn(t *testing.T) {
	uc := config.Defaults().Edge.UpstreamCheck
	if uc.Path != "" || uc.Interval != defaultCheckInterval || uc.Timeout != defaultCheckTimeout ||
		uc.HealthyThreshold != defaultHealthyThreshold || uc.UnhealthyThreshold != defaultUnhealthyThreshold {
		t.Fatalf("edge.upstream_check defaults %+v differ from infra/edge's Default* constants", uc)
	}
}
