package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
)

// Every flag or argument error exits 2 on every command, with a message in the flag's terms.
func TestExitTwoOnEveryUsageError(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"deploy", "--bogus"}, []string{"zero502 deploy: unknown flag: --bogus"}},
		{[]string{"invariants", "--bogus"}, []string{"zero502 invariants: unknown flag: --bogus"}},
		{[]string{"topology", "--bogus"}, []string{"unknown flag: --bogus"}},
		{[]string{"measure"}, []string{"zero502 measure: accepts 1 arg(s), received 0", "usage: zero502 measure"}},
		{[]string{"status", "extra"}, []string{"zero502 status", "unknown command"}},
		{[]string{"stop", "--config", filepath.Join("..", "..", "examples", "local.yaml"), "--lock-timeout", "-1s"}, []string{"--lock-timeout -1s: must not be negative"}},
		{[]string{"bogus"}, []string{`unknown command "bogus" for zero502 (see zero502 --help)`}},
		{[]string{"mesh", "bogus"}, []string{`unknown command "bogus" for zero502 mesh`}},
		// what the deployer runs over ssh: a host command an older zero502 lacks must fail, not print help and exit 0
		{[]string{"host", "bogus"}, []string{`unknown command "bogus" for zero502 host`}},
		{[]string{"app", "--port", "abc"}, []string{`--port "abc": must be a whole number`}},
		// a required flag left out is a bad flag too, never exit 1 (the app's own failure)
		{[]string{"app", "--port", "19001"}, []string{"zero502 app: --version is required"}},
		{[]string{"app", "--version", "v1"}, []string{"zero502 app: --port 0: give the port to listen on"}},
		{[]string{"deploy", "--lock-timeout", "soon"}, []string{`--lock-timeout "soon": must be a duration with a unit`}},
		{[]string{"mesh", "serve", "--name", "a", "--listen", "127.0.0.1:1", "--peers", "b=127.0.0.1:2,c=127.0.0.1:3", "--quorum", "1"},
			[]string{"--quorum 1: must be 2 or more"}},
		{[]string{"edge", "forward", "--drain", "x"}, []string{`--drain "x": must be a duration`}},
	} {
		out, code := runCLI(t, c.args...)
		if code != 2 {
			t.Errorf("zero502 %s: exit %d, want 2 (output %q)", strings.Join(c.args, " "), code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("zero502 %s: output %q lacks %q", strings.Join(c.args, " "), out, w)
			}
		}
		if strings.Contains(out, "strconv") || strings.Contains(out, "Quorum") {
			t.Errorf("zero502 %s: output %q shows Go internals", strings.Join(c.args, " "), out)
		}
	}
}

func TestVersionFlagAndCommand(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		out, code := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, "zero502 ") || !strings.Contains(out, "(commit ") {
			t.Errorf("zero502 %s: exit %d, output %q; want 0 and \"zero502 V (commit C)\"", args[0], code, out)
		}
		if strings.Contains(out, "dev ") {
			t.Errorf("zero502 %s: %q: an unstamped build shows its build info, not dev", args[0], out)
		}
	}
}

func TestVersionOfPrefersTheStampThenBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v0.4.1"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		stamped, commit string
		bi              *debug.BuildInfo
		want            string
	}{
		{"v1.2.3", "f00", bi, "v1.2.3 (commit f00)"},
		{"", "", bi, "v0.4.1 (commit abc123+dirty)"},
		{"", "", nil, "(devel) (commit unknown)"},
	} {
		if got := versionOf(c.stamped, c.commit, c.bi); got != c.want {
			t.Errorf("versionOf(%q, %q): %q, want %q", c.stamped, c.commit, got, c.want)
		}
	}
}

// Without --config, a missing ./zero502.yaml is said, not replaced by an empty fleet.
func TestConfigMissingDefaultSaysSo(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, cmd := range []string{"invariants", "status", "deploy --version v1", "stop", "watchdog"} {
		out, code := runCLI(t, strings.Fields(cmd)...)
		if code != 2 || !strings.Contains(out, "no ./zero502.yaml; pass --config FILE") {
			t.Errorf("zero502 %s without ./zero502.yaml: exit %d, %q; want 2 and \"no ./zero502.yaml; pass --config FILE\"", cmd, code, out)
		}
	}
}

// Config errors speak the config's language: the key as written, the value, the rule.
func TestConfigErrorsSpeakTheConfigsLanguage(t *testing.T) {
	local, err := os.ReadFile(filepath.Join("..", "..", "examples", "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const cmdLine = `    command: ["{self}", "app", "--version", "{version}", "--port", "{port}", "--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"]`
	if !strings.Contains(string(local), cmdLine) {
		t.Fatal("examples/local.yaml changed its command line; update this test")
	}
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "z.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name   string
		config string
		env    [2]string
		want   []string
		not    []string
	}{
		{"env value a number", strings.Replace(string(local), cmdLine, cmdLine+"\n    env: {DEBUG: 1}", 1), [2]string{},
			[]string{"services[0].env.DEBUG", "must be text", `DEBUG: "1"`}, []string{"unconvertible", "debug]"}},
		{"command a string", strings.Replace(string(local), cmdLine, `    command: "{self} app --port {port}"`, 1), [2]string{},
			[]string{"services[0].command", "must be a list"}, []string{"source data", "slice"}},
		{"bad env duration", string(local), [2]string{"ZERO502_DRAIN_WINDOW", "banana"},
			[]string{"environment variable ZERO502_DRAIN_WINDOW=banana", "drain.window", "not a duration"}, []string{"config /"}},
		{"misspelt env", string(local), [2]string{"ZERO502_DRAIN_WINDW", "1s"},
			[]string{"ZERO502_DRAIN_WINDW sets no config key", "did you mean ZERO502_DRAIN_WINDOW?"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			out, code := runCLI(t, "invariants", "--config", write(c.config))
			if code != 2 {
				t.Errorf("exit %d, want 2: %s", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q", out, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(out, n) {
					t.Errorf("output %q has %q", out, n)
				}
			}
		})
	}
}

// --lock-timeout 0 refuses at once when another deploy holds the fleet lock (it never means the
// 10-minute default), naming the holder; a negative one is a flag error.
func TestDeployLockTimeoutZeroRefusesAtOnce(t *testing.T) {
	dir := t.TempDir()
	path, cfg := localConfigIn(t, dir)
	_, out, code := whileFleetLockHeld(t, cfg, "zero502 deploy --version v0", "deploy", "--config", path, "--version", "v1", "--lock-timeout", "0")
	if code != 2 || !strings.Contains(out, "ops@test") || !strings.Contains(out, cfg.FleetLockPath()) {
		t.Errorf("--lock-timeout 0 with the fleet lock held: exit %d, want 2 naming the holder and the lock\n%s", code, out)
	}
	out, code = runCLI(t, "deploy", "--config", path, "--version", "v1", "--lock-timeout", "-1s")
	if code != 2 || !strings.Contains(out, "--lock-timeout -1s: must not be negative") {
		t.Errorf("--lock-timeout -1s: exit %d, %q", code, out)
	}
}

// A deploy refused before anything changed (here: the fleet lock held, --lock-timeout 0) exits 2
// even when its --report HTML cannot be written (/dev/full): the write error is said as well, and
// the refusal once, in the report.
func TestARefusedDeployExitsTwoEvenWhenItsHTMLReportCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	path, cfg := localConfigIn(t, dir)
	_, out, code := whileFleetLockHeld(t, cfg, "zero502 deploy --version v0", "deploy", "--config", path, "--version", "v1",
		"--lock-timeout", "0", "--report", "/dev/full")
	if !strings.Contains(out, "another deploy of this fleet is running") {
		t.Fatalf("setup: the deploy was not refused for the held lock:\n%s", out)
	}
	if code != 2 {
		t.Errorf("refused deploy with an unwritable --report: exit %d, want 2 (refused, nothing changed)\n%s", code, out)
	}
	if !strings.Contains(out, "--report /dev/full") {
		t.Errorf("the --report write error is not said:\n%s", out)
	}
	if n := strings.Count(out, "another deploy of this fleet is running"); n != 1 {
		t.Errorf("the refusal is said %d times, want once:\n%s", n, out)
	}
}

// localConfigIn is examples/local.yaml with its state under dir, written there as z.yaml, and
// loaded.
func localConfigIn(t *testing.T, dir string) (string, *config.Config) {
	t.Helper()
	local, err := os.ReadFile(filepath.Join("..", "..", "examples", "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "z.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(local), "/tmp/zero502-{uid}", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// whileFleetLockHeld takes cfg's fleet lock as ops@test running command (released when the test
// ends, or earlier through held), then runs zero502 args, which must return within 30s (a bound
// on a hang, not a timing claim), and returns its output and exit code.
func whileFleetLockHeld(t *testing.T, cfg *config.Config, command string, args ...string) (held *hostlock.Lock, out string, code int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(cfg.FleetLockPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := hostlock.TryAcquire(cfg.FleetLockPath(), hostlock.Holder{Who: "ops@test", Command: command})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Release() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, code = runCLI(t, args...)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("zero502 %s waited for the held fleet lock", strings.Join(args, " "))
	}
	return held, out, code
}
