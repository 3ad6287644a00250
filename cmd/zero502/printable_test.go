package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
)

// hostSays is what a host (its step's events and report, its look, its ssh stderr) could send
// to take over the operator's terminal: clear the screen, set the window title, rewrite the line
// it is on, a C1 CSI.
const hostSays = "\x1b[2J\x1b]0;pwned\x07deployed\rfailed \u009b31m"

// assertPrintable fails when out holds a control character other than newline and tab, and
// wants the escaped form of hostSays in it.
func assertPrintable(t *testing.T, what, out string) {
	t.Helper()
	if i := strings.IndexFunc(out, func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f
	}); i >= 0 {
		t.Errorf("%s holds control %q at %d:\n%q", what, out[i:i+1], i, out)
	}
	if !strings.Contains(out, `\x1b[2J\x1b]0;pwned\adeployed\rfailed \u009b31m`) {
		t.Errorf("%s does not show what the host sent, escaped:\n%q", what, out)
	}
}

// Text a host sent reaches the terminal escaped in the deploy's progress lines, its report, the
// status table and the error line, and stays as sent (JSON-escaped) in --json.
func TestWhatAHostSaysCannotDriveTheTerminal(t *testing.T) {
	var prog bytes.Buffer
	progress(&prog, false)(deployer.Event{Host: "host-a", Step: "stopped", Message: hostSays})
	assertPrintable(t, "the progress line", prog.String())

	var js bytes.Buffer
	progress(&js, true)(deployer.Event{Host: "host-a", Step: "stopped", Message: hostSays})
	if !strings.Contains(js.String(), `\u001b[2J`) || strings.ContainsRune(js.String(), 0x1b) {
		t.Errorf("--json event %q: want the message JSON-escaped as sent", js.String())
	}

	var rep bytes.Buffer
	renderReport(&rep, &report.Report{Version: "v2", Started: time.Now(), Error: "host-a: " + hostSays,
		Hosts: []report.HostReport{{Host: "host-a", From: "v1", To: "v2", Outcome: "failed", Running: "v1", Error: hostSays}}}, false)
	assertPrintable(t, "the report", rep.String())

	var st bytes.Buffer
	writeStatus(&st, &deployer.FleetStatus{Hosts: []deployer.HostStatus{{Host: "host-a", Problems: []string{hostSays}}}}, time.Now())
	assertPrintable(t, "the status", st.String())

	assertPrintable(t, "the error line", errorLine(nil, errors.New("host host-a: the step ended without its report (stdout said: "+hostSays+")\nnext line")))
}

// lock status prints the holder and message another user of the fleet wrote (the maintenance
// record beside the lock: a file on the lock host), escaped.
func TestLockStatusShowsAnotherUsersRecordEscaped(t *testing.T) {
	path, cfg := noneFleetIn(t, t.TempDir())
	var stdout, stderr bytes.Buffer
	if code, err := execute(nil, &stdout, &stderr, "lock", "acquire", "--config", path, "-m", "migration"); code != 0 {
		t.Fatalf("lock acquire: exit %d, %v\n%s", code, err, stderr.String())
	}
	record := cfg.FleetLockPath() + ".maintenance"
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", record, err)
	}
	h, _ := m["holder"].(map[string]any)
	if h == nil {
		t.Fatalf("%s has no holder: %s", record, data)
	}
	h["who"] = hostSays
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code, err := execute(nil, &stdout, &stderr, "lock", "status", "--config", path); code != 0 && err != nil {
		t.Fatalf("lock status: exit %d, %v", code, err)
	}
	assertPrintable(t, "lock status", stdout.String())
}
