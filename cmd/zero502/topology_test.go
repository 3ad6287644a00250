package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runTopology runs `zero502 topology` in-process and returns its output and exit code.
func runTopology(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runCLI(t, append([]string{"topology"}, args...)...)
}

func TestTopologyCommandExampleFlipsWithoutTheRegion(t *testing.T) {
	out, code := runTopology(t, "--example")
	if code != 0 || !strings.HasPrefix(out, "winner: POOL1, score 30") || !strings.Contains(out, "this 40 is never used") {
		t.Fatalf("--example: exit %d\n%s", code, out)
	}
	out, code = runTopology(t, "--example", "--without-region")
	if code != 0 || !strings.HasPrefix(out, "winner: POOL2, score 40") {
		t.Fatalf("--example --without-region: exit %d\n%s", code, out)
	}
}

func TestTopologyCommandReadsAFileAndPrintsJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topology.yaml")
	yaml := `prefer_edns0_client_subnet: true
pools: [{name: NEAR, fallback: none}, {name: FAR, fallback: none}]
records:
  - {source: "subnet 10.9.0.0/16", destination: "pool NEAR", score: 10}
  - {source: "subnet 0.0.0.0/0", destination: "pool FAR", score: 5}
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runTopology(t, "--file", path, "--ldns", "192.0.2.1", "--ecs", "10.9.0.0/24", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var res struct {
		Winner      string `json:"winner"`
		AddressFrom string `json:"address_from"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Winner != "NEAR" || res.AddressFrom != "edns0-client-subnet" {
		t.Fatalf("the client subnet should decide: %+v", res)
	}
}

func TestTopologyCommandRefusesBadInputWithExit2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("pools: [{name: P}]\nrecords: [{source: subnet 10.1.2.7/24, destination: pool P}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--file", path, "--ldns", "10.1.2.7"}, "records[0].source"},
		{[]string{"--file", path}, "--ldns is required"},
		{[]string{}, "--file is required"},
		{[]string{"--example", "--file", path}, "give one"},
		{[]string{"--without-region"}, "only applies to --example"},
		{[]string{"--example", "--ldns", "10.1.2"}, `--ldns "10.1.2"`},
		{[]string{"--example", "--ecs", "10.9.0.0"}, "not CIDR"},
	} {
		out, code := runTopology(t, tc.args...)
		if code != 2 || !strings.Contains(out, tc.says) {
			t.Errorf("%v: exit %d, want 2 saying %q\n%s", tc.args, code, tc.says, out)
		}
	}
}
