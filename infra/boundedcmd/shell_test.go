package boundedcmd

import (
	"slices"
	"testing"
)

// ChildEnv drops exactly the secret variables, whatever their values, and keeps the rest.
func TestChildEnvDropsOnlyTheSecrets(t *testing.T) {
	in := []string{"PATH=/usr/bin", "ZERO502_MESH_KEY=k", "ZERO502_ALERT_WEBHOOK=", "ZERO502_LB_ADMIN_TOKEN=t",
		"ZERO502_EDGE_ADMIN_TOKEN=t", "ZERO502_MESH_KEYS=kept", "HOME=/root"}
	got := ChildEnv(in)
	want := []string{"PATH=/usr/bin", "ZERO502_MESH_KEYS=kept", "HOME=/root"}
	if !slices.Equal(got, want) {
		t.Errorf("ChildEnv = %q; want %q", got, want)
	}
	if in[1] != "ZERO502_MESH_KEY=k" {
		t.Error("ChildEnv changed its argument")
	}
}
