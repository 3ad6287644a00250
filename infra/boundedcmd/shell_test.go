package boundedcmd

import (
	"context"
	"slices"
	"strings"
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

// A command run through ShellCommand (a mesh check, an alert command) finds none of the
// variables through which zero502 takes a secret in its environment: the LB's, the edge's and
// the config's balancer.admin_token override, the mesh key, the webhook URL.
func TestAShellCommandGetsNoSecretOfTheEnvironment(t *testing.T) {
	secrets := []string{"ZERO502_MESH_KEY", "ZERO502_ALERT_WEBHOOK", "ZERO502_LB_ADMIN_TOKEN", "ZERO502_EDGE_ADMIN_TOKEN",
		"ZERO502_BALANCER_ADMIN_TOKEN"}
	for _, name := range secrets {
		t.Setenv(name, "s3cret-"+name)
	}
	t.Setenv("ZERO502_NOT_A_SECRET", "kept")
	cmd, err := ShellCommand(context.Background(), "--check-command", "env")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "ZERO502_NOT_A_SECRET=kept") {
		t.Fatalf("the command's environment lacks an ordinary variable:\n%s", out)
	}
	for _, name := range secrets {
		if strings.Contains(string(out), "s3cret-"+name) {
			t.Errorf("the command got $%s", name)
		}
	}
}
