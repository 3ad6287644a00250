package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer"
)

// zero502 host pause on the lock host (host-a, the first): write takes the record after the
// config on stdin, as the deployer sends it over ssh, and keeps it 0600 beside the fleet lock;
// read gives it back; remove takes it away, and then read and remove say nothing is paused.
// Asked wrongly (an unknown operation, another host than the lock host, no --host, a record that
// is not one) it exits 2 saying why, and the record stays as it was.
func TestHostPauseKeepsTheRecordBesideTheFleetLock(t *testing.T) {
	path, cfg := noneFleetIn(t, t.TempDir())
	conf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stream := func(record string) *strings.Reader {
		return strings.NewReader(string(conf) + "\n" + deployer.ConfigEnd + "\n" + record + "\n")
	}
	// run runs zero502 host pause ARGS with stdin and returns its line, its exit code and what it
	// said: the line's error, the command's error, stderr.
	run := func(stdin *strings.Reader, args ...string) (deployer.PauseLine, int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		code, err := execute(stdin, &out, &errOut, append([]string{"host", "pause"}, args...)...)
		var l deployer.PauseLine
		if out.Len() > 0 {
			if err := json.Unmarshal(out.Bytes(), &l); err != nil {
				t.Fatalf("host pause %v printed %q: not one PauseLine: %v", args, out.String(), err)
			}
		}
		said := l.Error // why, as the line says it, or as the command's error
		if err != nil && err.Error() != "" {
			said += " " + err.Error()
		}
		return l, code, strings.TrimSpace(said + " " + errOut.String())
	}
	record := filepath.Join(filepath.Dir(cfg.FleetLockPath()), "paused.json")

	if l, code, out := run(nil, "read", "--config", path, "--host", "host-a"); code != 0 || !l.NotPaused || l.Path != record {
		t.Fatalf("read with nothing paused: exit %d, %s; want 0, not_paused at %s", code, out, record)
	}
	rec := `{"version":"v2","canary":["host-a"],"since":"2025-01-02T03:04:05Z","by":"ci@runner pid 7","from":{"host-a":"v1"}}`
	if l, code, out := run(stream(rec), "write", "--config", "-", "--host", "host-a"); code != 0 || l.Pause == nil || l.Pause.Version != "v2" {
		t.Fatalf("write: exit %d, %s; want 0 and the record", code, out)
	}
	if st, err := os.Stat(record); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the written record %s: %v, %v; want mode 0600", record, st, err)
	}
	l, code, out := run(nil, "read", "--config", path, "--host", "host-a")
	if code != 0 || l.Pause == nil || l.Pause.Version != "v2" || l.Pause.From["host-a"] != "v1" || l.Pause.By != "ci@runner pid 7" {
		t.Fatalf("read after write: exit %d, %s; want the record written", code, out)
	}

	before, _ := os.ReadFile(record)
	for _, c := range []struct {
		name  string
		stdin *strings.Reader
		args  []string
		want  string
	}{
		{"an unknown operation", nil, []string{"frob", "--config", path, "--host", "host-a"}, `operation "frob": must be read, write or remove`},
		{"not the lock host", nil, []string{"read", "--config", path, "--host", "host-b"}, `is not this fleet's lock host (rollout.lock_host "host-a")`},
		{"no --host", nil, []string{"read", "--config", path}, "--host is required"},
		{"a misspelt field", stream(`{"versoin":"v3","canary":["host-a"]}`), []string{"write", "--config", "-", "--host", "host-a"}, `unknown field "versoin"`},
		{"no version", stream(`{"canary":["host-a"]}`), []string{"write", "--config", "-", "--host", "host-a"}, "names no version"},
		{"a decision of neither kind", stream(`{"version":"v3","canary":["host-a"],"decision":"yes"}`), []string{"write", "--config", "-", "--host", "host-a"}, `decision "yes": must be promote, abort`},
		{"no record", stream(""), []string{"write", "--config", "-", "--host", "host-a"}, "got nothing"},
	} {
		_, code, out := run(c.stdin, c.args...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, %s; want 2 saying %q", c.name, code, out, c.want)
		}
	}
	if after, _ := os.ReadFile(record); !bytes.Equal(before, after) {
		t.Errorf("the refused requests changed the record:\n%s\nwas:\n%s", after, before)
	}

	if l, code, out := run(nil, "remove", "--config", path, "--host", "host-a"); code != 0 || l.NotPaused {
		t.Fatalf("remove: exit %d, %s; want 0, removed", code, out)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("after remove the record %s: %v; want it gone", record, err)
	}
	for _, op := range []string{"remove", "read"} {
		if l, code, out := run(nil, op, "--config", path, "--host", "host-a"); code != 0 || !l.NotPaused {
			t.Errorf("%s with nothing paused: exit %d, %s; want 0, not_paused", op, code, out)
		}
	}
}
