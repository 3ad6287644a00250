package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/topology"
)

func TestTopologyCommandExampleFlipsWithoutTheRegion(t *testing.T) {
	out, code := runCLI(t, "topology", "--example")
	if code != 0 || !strings.HasPrefix(out, "winner: POOL1, score 30") || !strings.Contains(out, "this 40 is never used") {
		t.Fatalf("--example: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "topology", "--example", "--without-region")
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
	out, code := runCLI(t, "topology", "--file", path, "--ldns", "192.0.2.1", "--ecs", "10.9.0.0/24", "--json")
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

	// the same YAML on stdin: read once (it was read twice and failed "empty topology file")
	out, code = runCLIIn(t, strings.NewReader(yaml), "topology", "--file", "-", "--ldns", "192.0.2.1", "--ecs", "10.9.0.0/24", "--json")
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Winner != "NEAR" {
		t.Fatalf("YAML on --file -: exit %d %+v (%v)\n%s", code, res, err, out)
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
		out, code := runCLI(t, append([]string{"topology"}, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.says) {
			t.Errorf("%v: exit %d, want 2 saying %q\n%s", tc.args, code, tc.says, out)
		}
	}
}

func TestTopologyCommandReadsATMSHPaste(t *testing.T) {
	out, code := runCLIIn(t, strings.NewReader(topology.ExampleTMSH), "topology", "--file", "-")
	if code != 0 || !strings.Contains(out, "winner: POOL1, score 30") || !strings.Contains(out, "SHADOWED for POOL2 by record 2 (this 40 is never used)") {
		t.Fatalf("stdin paste: exit %d\n%s", code, out)
	}

	path := filepath.Join(t.TempDir(), "paste.txt")
	if err := os.WriteFile(path, []byte(topology.ExampleTMSH), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = runCLI(t, "topology", "--file", path, "--json")
	var d struct {
		Mode    string `json:"mode"`
		Records []struct {
			Index      int  `json:"index"`
			ShadowedBy *int `json:"shadowed_by"`
		} `json:"records"`
		Winner struct {
			Names []string `json:"names"`
			Score *int     `json:"score"`
		} `json:"winner"`
	}
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if d.Mode != "evaluate" || len(d.Winner.Names) != 1 || d.Winner.Names[0] != "POOL1" || *d.Winner.Score != 30 ||
		d.Records[2].Index != 1 || d.Records[2].ShadowedBy == nil || *d.Records[2].ShadowedBy != 2 {
		t.Fatalf("decision %+v\n%s", d, out)
	}

	// --ldns overrides the paste's source line: from outside the region only the wildcard matches.
	out, code = runCLI(t, "topology", "--file", path, "--ldns", "10.9.9.9")
	if code != 0 || !strings.Contains(out, "winner: POOL2, score 40") {
		t.Fatalf("--ldns override: exit %d\n%s", code, out)
	}
}

// A paste saved by an editor that starts its UTF-8 files with a byte order mark (Notepad) is
// still a tmsh paste, read from a file or from stdin: the mark is no part of the first word.
func TestTopologyCommandReadsATMSHPasteSavedWithAByteOrderMark(t *testing.T) {
	paste := "\ufeff" + topology.ExampleTMSH
	out, code := runCLIIn(t, strings.NewReader(paste), "topology", "--file", "-")
	if code != 0 || !strings.Contains(out, "winner: POOL1, score 30") {
		t.Fatalf("stdin paste with a byte order mark: exit %d\n%s", code, out)
	}
	path := filepath.Join(t.TempDir(), "paste.txt")
	if err := os.WriteFile(path, []byte(paste), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = runCLI(t, "topology", "--file", path, "--ldns", "10.9.9.9")
	if code != 0 || !strings.Contains(out, "winner: POOL2, score 40") {
		t.Fatalf("file paste with a byte order mark: exit %d\n%s", code, out)
	}
}

func TestTopologyCommandRefusesABadPasteWithExit2AndTheShape(t *testing.T) {
	for _, tc := range []struct{ name, paste, says string }{
		{"empty input", "", "empty input"},
		{"no topology records", "gtm wideip a www.example.com { pools { /Common/P { } } }\nsource ip=10.0.0.1\n", "no gtm topology records"},
		{"region destination", "gtm region /Common/r { region-members { country PT { } } }\ngtm topology ldns: country PT server: region /Common/r { score 5 }\nsource country=PT\n", "cannot be a candidate"},
		{"candidates naming nothing known", "gtm topology ldns: country PT server: pool /Common/A { score 5 }\ncandidates NOPE\nsource country=PT\n", "names nothing known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLIIn(t, strings.NewReader(tc.paste), "topology", "--file", "-")
			if code != 2 || !strings.Contains(out, tc.says) || !strings.Contains(out, "gtm topology ldns: subnet 10.1.2.0/24 server: pool /Common/POOL1 { score 30 }") {
				t.Fatalf("exit %d, want 2 saying %q and showing the expected shape\n%s", code, tc.says, out)
			}
		})
	}
}
