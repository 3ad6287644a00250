package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/boundedcmd"
)

// A Value never prints its value: not with %v, %s, %+v or %#v, not in JSON, not inside a map.
func TestAValueNeverPrints(t *testing.T) {
	v := Value("hunter2")
	m := map[string]Value{"DB_PASSWORD": v}
	js, err := json.Marshal(struct{ M map[string]Value }{m})
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprint(v), fmt.Sprintf("%s %v %+v %#v", v, v, m, m), string(js)} {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, Redacted) {
			t.Errorf("printed %q: want %s, never the value", out, Redacted)
		}
	}
	if string(v) != "hunter2" {
		t.Fatal("string(v) must give the value")
	}
}

func TestDotenvReadsWhatItWritesAndNamesTheLineOfAnError(t *testing.T) {
	in := map[string]Value{"A": "plain", "B": `with "quotes" and \ and # hash`, "C": "two\nlines\r\tand tab", "D": ""}
	out, err := ParseDotenv(FormatDotenv(in), "test")
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %v, %v; want %v", out, err, in)
	}
	got, err := ParseDotenv([]byte("# comment\n\nexport TOKEN=abc # trailing\nQ='lit $x \\n'\nE=\"a\\tb\"\n"), "f")
	if err != nil || got["TOKEN"] != "abc" || got["Q"] != `lit $x \n` || got["E"] != "a\tb" {
		t.Fatalf("parse: %v %v", got, err)
	}
	for _, bad := range []string{"NOEQUALS\n", "1BAD=x\n", "A=\"open\n", "A='open\n", "A=\"x\" y\n"} {
		_, err := ParseDotenv([]byte("OK=1\n"+bad), "secrets.env")
		if err == nil || !strings.Contains(err.Error(), "secrets.env line 2") {
			t.Errorf("%q: %v, want an error naming secrets.env line 2", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "open") {
			t.Errorf("%q: the error %q shows the value", bad, err)
		}
	}
}

func FuzzDotenvRoundTrip(f *testing.F) {
	f.Add("NAME", "value")
	f.Add("X", "a\"b\\c\nd\re\tf #g")
	f.Fuzz(func(t *testing.T, name, value string) {
		if !ValidName(name) || strings.ContainsRune(value, 0) {
			return
		}
		in := map[string]Value{name: Value(value)}
		out, err := ParseDotenv(FormatDotenv(in), "fuzz")
		if err != nil || !reflect.DeepEqual(in, out) {
			t.Fatalf("%q=%q: read back %v, %v", name, value, out, err)
		}
	})
}

func writeFile(t *testing.T, name, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return path
}

func noEnv(string) (string, bool) { return "", false }

// File first, then the command's output, then the environment; each name from the first that
// has it, and the report says which.
func TestResolveTakesEachNameFromTheFirstSourceThatHasIt(t *testing.T) {
	file := writeFile(t, "secrets.env", "A=from-file\n", 0o600)
	src := Sources{File: file, Command: []string{"sh", "-c", `printf 'A=from-command\nB=from-command\n'`},
		Env: func(n string) (string, bool) { return "from-env-" + n, n == "C" || n == "B" }}
	vals, where, err := Resolve(context.Background(), []string{"C", "B", "A", "A"}, src)
	if err != nil {
		t.Fatal(err)
	}
	if vals["A"] != "from-file" || vals["B"] != "from-command" || vals["C"] != "from-env-C" || len(vals) != 3 {
		t.Fatalf("values %#v", map[string]string{"A": string(vals["A"]), "B": string(vals["B"]), "C": string(vals["C"])})
	}
	want := []Where{{"A", "secrets.file " + file}, {"B", "secrets.command"}, {"C", "the environment"}}
	if !reflect.DeepEqual(where, want) {
		t.Fatalf("where %v, want %v", where, want)
	}
	// Everything in the file: the command is never run.
	marker := filepath.Join(t.TempDir(), "ran")
	if _, _, err := Resolve(context.Background(), []string{"A"}, Sources{File: file, Command: []string{"touch", marker}, Env: noEnv}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("secrets.command ran although the file had every name")
	}
}

func TestResolveRefusesWhatItCannotTrustOrFind(t *testing.T) {
	ctx := context.Background()
	open := writeFile(t, "secrets.env", "A=x\n", 0o644)
	if _, _, err := Resolve(ctx, []string{"A"}, Sources{File: open, Env: noEnv}); err == nil ||
		!strings.Contains(err.Error(), open) || !strings.Contains(err.Error(), "mode 0644") || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a 0644 secrets file: %v, want refused naming path, mode and chmod 600", err)
	}
	_, _, err := Resolve(ctx, []string{"B", "A"}, Sources{Env: func(n string) (string, bool) { return "v", n == "A" }})
	if err == nil || !strings.Contains(err.Error(), "secret(s) B: not found in the deploy's environment") {
		t.Errorf("a name nowhere: %v, want it named with the sources tried", err)
	}
	_, _, err = Resolve(ctx, []string{"A"}, Sources{Command: []string{"sh", "-c", "echo A=leaked; echo 'vault sealed' >&2; exit 3"}, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), "exited 3: vault sealed") || strings.Contains(err.Error(), "leaked") {
		t.Errorf("a failing command: %v, want its exit code and stderr, never its output", err)
	}
	// jq quotes what it failed on: with the documented `aws secretsmanager … | jq` pattern, the
	// secret itself. What stderr quotes is withheld; the rest of it still says why.
	_, _, err = Resolve(ctx, []string{"A"}, Sources{Command: []string{"sh", "-c",
		`echo "jq: error (at <stdin>:1): Invalid literal (while parsing 'hunter2') and \"s3cret\"" >&2; exit 5`}, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), "exited 5: jq: error (at <stdin>:1): Invalid literal (while parsing") ||
		strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a failing command whose stderr quotes a value: %v, want its stderr without what it quotes", err)
	}
	start := time.Now()
	_, _, err = Resolve(ctx, []string{"A"}, Sources{Command: []string{"sleep", "30"}, CommandTimeout: 200 * time.Millisecond, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") || time.Since(start) > 10*time.Second {
		t.Errorf("a command that hangs: %v after %s, want stopped at its timeout", err, time.Since(start))
	}
	// a child that keeps the output open (a wrapper script, a prompt) dies with it
	start = time.Now()
	_, _, err = Resolve(ctx, []string{"A"}, Sources{Command: []string{"sh", "-c", "sleep 30; echo A=x"}, CommandTimeout: 200 * time.Millisecond, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") || time.Since(start) > 10*time.Second {
		t.Errorf("a command whose child hangs: %v after %s, want stopped at its timeout", err, time.Since(start))
	}
	// output past the bound is not cut and taken: its last value would be another value
	_, _, err = Resolve(ctx, []string{"A"}, Sources{Command: []string{"sh", "-c", "head -c 1048570 /dev/zero | tr '\\0' '#'; echo; echo A=abcdefghij"}, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), "more than 1048576 bytes") || strings.Contains(err.Error(), "abc") {
		t.Errorf("a command printing more than 1 MiB: %v, want refused, taking none of it", err)
	}
}

// secrets.command's program passes infra/trust before it runs, as a hook's: one in a directory
// others may write, or one others may write itself, is refused naming the program and the rule,
// and never runs; the same program kept private runs.
func TestSecretsCommandRunsOnlyATrustedProgram(t *testing.T) {
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\ntouch " + marker + "\necho A=from-command\n"
	dir := t.TempDir()
	for _, tc := range []struct {
		name             string
		dirMode, modeNow os.FileMode
		want             string // the refused path, with its mode; "" runs
	}{
		{"in a world-writable directory", 0o777, 0o755, "directory %s has mode 0777"},
		{"in a group-writable directory", 0o775, 0o755, "directory %s has mode 0775"},
		{"group-writable itself", 0o755, 0o775, "file %s has mode 0775"},
		{"trusted", 0o700, 0o755, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(marker)
			sub, err := os.MkdirTemp(dir, "bin")
			if err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(sub, "secrets.sh")
			if err := os.WriteFile(prog, []byte(script), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(prog, tc.modeNow); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sub, tc.dirMode); err != nil {
				t.Fatal(err)
			}
			vals, _, err := Resolve(ctx, []string{"A"}, Sources{Command: []string{prog}, Env: noEnv})
			_, statErr := os.Stat(marker)
			if tc.want == "" {
				if err != nil || vals["A"] != "from-command" || statErr != nil {
					t.Fatalf("a trusted program: %v (ran: %v); want it run and its output read", err, statErr == nil)
				}
				return
			}
			refused := fmt.Sprintf(tc.want, sub)
			if tc.dirMode == 0o755 {
				refused = fmt.Sprintf(tc.want, prog)
			}
			if err == nil || !strings.Contains(err.Error(), "secrets.command "+prog) || !strings.Contains(err.Error(), refused) ||
				!strings.Contains(err.Error(), "neither it nor a directory above it writable by anyone else") {
				t.Errorf("got %v; want refused naming the program, %q and the rule", err, refused)
			}
			if statErr == nil {
				t.Error("the untrusted program ran")
			}
		})
	}
	_, _, err := Resolve(ctx, []string{"A"}, Sources{Command: []string{"no-such-secrets-program"}, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), `secrets.command "no-such-secrets-program"`) || !strings.Contains(err.Error(), "on PATH") {
		t.Errorf("a program not on PATH: %v; want it named with the fix", err)
	}
}

// A deploy called off (Ctrl-C, SIGTERM) while secrets.command runs says so, not that the
// command gave no answer within its timeout and may be waiting at a prompt.
func TestASecretsCommandCalledOffSaysSoNotThatItTimedOut(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Resolve(ctx, []string{"A"}, Sources{Command: []string{"sleep", "30"}, CommandTimeout: time.Minute, Env: noEnv})
	if err == nil || strings.Contains(err.Error(), "no answer within") || !errors.Is(err, context.Canceled) {
		t.Errorf("secrets.command of a deploy called off: %v; want an error wrapping context.Canceled, not a timeout", err)
	}
}

// A value holding a NUL byte, which no process can be given in its environment (a binary secret,
// a file with a stray NUL), is refused by Resolve, before anything changes, naming the secret
// and where it came from, as the config refuses services[].env values with one; never the value.
func TestAValueWithANULByteIsRefusedNamingTheSecretAndItsSource(t *testing.T) {
	file := writeFile(t, "secrets.env", "A=ok\nB=hunt\x00er2\n", 0o600)
	_, _, err := Resolve(context.Background(), []string{"A", "B"}, Sources{File: file, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), "B") || !strings.Contains(err.Error(), "NUL") || !strings.Contains(err.Error(), file) ||
		strings.Contains(err.Error(), "hunt") {
		t.Errorf("a secret whose value holds a NUL byte: %v; want it refused naming B, its source and the rule, never the value", err)
	}
	_, _, err = Resolve(context.Background(), []string{"C"}, Sources{Env: func(string) (string, bool) { return "x\x00y", true }})
	if err == nil || !strings.Contains(err.Error(), "C") || !strings.Contains(err.Error(), "NUL") || !strings.Contains(err.Error(), "environment") {
		t.Errorf("a secret from the environment holding a NUL byte: %v; want it refused naming C and its source", err)
	}
}

// secrets.command runs without zero502's own secrets in its environment (the LB's and the
// edge's admin tokens, the mesh key, the alert webhook: boundedcmd.SecretEnv): it fetches the
// services' secrets and needs none of them; the rest of the deploy job's environment it keeps.
func TestSecretsCommandGetsNoneOfZero502sOwnSecrets(t *testing.T) {
	for _, name := range boundedcmd.SecretEnv() {
		t.Setenv(name, "zero502-own-"+name)
	}
	t.Setenv("SECRETS_TEST_KEPT", "kept")
	env := filepath.Join(t.TempDir(), "env")
	vals, _, err := Resolve(context.Background(), []string{"A"}, Sources{Command: []string{"sh", "-c", "env > " + env + "; echo A=x"}, Env: noEnv})
	if err != nil || vals["A"] != "x" {
		t.Fatalf("secrets.command: %v %v", vals, err)
	}
	data, err := os.ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "zero502-own-") || !strings.Contains(string(data), "SECRETS_TEST_KEPT=kept") {
		t.Errorf("secrets.command's environment:\n%s\nwant none of %v, and SECRETS_TEST_KEPT", data, boundedcmd.SecretEnv())
	}
}
