package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/infra/trust"
)

// Sources are where a deploy looks a secret's name up, in this order: File, then the output of
// Command, then each of Stores, then the deploy job's environment (Env). The first that has the
// name gives the value.
type Sources struct {
	// File is a dotenv file (secrets.file) only its owner may read or write.
	File string
	// Command (secrets.command) is run once, without a shell, in the deploy job's environment,
	// when a name is not in File: its standard output is dotenv text (as `op inject`, `bw`, or
	// `aws secretsmanager get-secret-value … | jq` can print). Its program (found on PATH
	// unless it has a slash) must pass infra/trust, as a hook's: one another user could change
	// is refused before it runs.
	Command []string
	// CommandTimeout bounds Command (30s when 0).
	CommandTimeout time.Duration
	// Stores are secret stores asked next, in order, for the names still missing (AWS Secrets
	// Manager).
	Stores []Store
	// Env looks a name up in the deploy job's environment (os.LookupEnv when nil).
	Env func(string) (string, bool)
}

// Store is a secret store: Lookup returns the values it has of names, leaving out those it does
// not have; an error is a store that could not be asked (never a name it lacks), and holds no
// value.
type Store struct {
	Name   string
	Lookup func(ctx context.Context, names []string) (map[string]Value, error)
}

// Where is the source a secret's value came from, as Resolve reports it.
type Where struct {
	Name, Source string
}

// Resolve finds every name in names from src. It fails, naming every name it could not find and
// the sources it tried, or every value that holds a NUL byte (no process can be given one) and
// where it came from, before the caller changes anything. The values come back with where each
// was found (names only: for a progress line).
func Resolve(ctx context.Context, names []string, src Sources) (map[string]Value, []Where, error) {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	out := map[string]Value{}
	var where []Where
	var tried []string
	missing := func() []string {
		var m []string
		for _, n := range names {
			if _, ok := out[n]; !ok {
				m = append(m, n)
			}
		}
		return m
	}
	take := func(vals map[string]Value, source string) {
		for _, n := range missing() {
			if v, ok := vals[n]; ok {
				out[n] = v
				where = append(where, Where{Name: n, Source: source})
			}
		}
	}
	if src.File != "" && len(missing()) > 0 {
		vals, err := ReadFile(src.File)
		if err != nil {
			return nil, nil, err
		}
		take(vals, "secrets.file "+src.File)
		tried = append(tried, "secrets.file "+src.File)
	}
	if len(src.Command) > 0 && len(missing()) > 0 {
		vals, err := runCommand(ctx, src.Command, src.CommandTimeout)
		if err != nil {
			return nil, nil, err
		}
		take(vals, "secrets.command")
		tried = append(tried, "secrets.command "+src.Command[0])
	}
	for _, st := range src.Stores {
		m := missing()
		if len(m) == 0 {
			break
		}
		vals, err := st.Lookup(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		take(vals, st.Name)
		tried = append(tried, st.Name)
	}
	if m := missing(); len(m) > 0 {
		env := src.Env
		if env == nil {
			env = os.LookupEnv
		}
		vals := map[string]Value{}
		for _, n := range m {
			if v, ok := env(n); ok {
				vals[n] = Value(v)
			}
		}
		take(vals, "the environment")
		tried = append(tried, "the deploy's environment")
	}
	if m := missing(); len(m) > 0 {
		return nil, nil, fmt.Errorf("secret(s) %s: not found in %s; add each to secrets.file (NAME=value, mode 0600), "+
			"print it from secrets.command, or set it in the deploy job's environment", strings.Join(m, ", "), strings.Join(tried, ", "))
	}
	slices.SortFunc(where, func(a, b Where) int { return strings.Compare(a.Name, b.Name) })
	var nul []string
	for _, w := range where {
		if strings.ContainsRune(string(out[w.Name]), 0) {
			nul = append(nul, w.Name+" (from "+w.Source+")")
		}
	}
	if len(nul) > 0 {
		return nil, nil, fmt.Errorf("secret(s) %s: the value holds a NUL byte, which no process can be given in its environment; "+
			"fix the value where it comes from (a binary secret must be encoded, e.g. in base64)", strings.Join(nul, ", "))
	}
	return out, where, nil
}

// ReadFile reads a dotenv secrets file, refusing one another user could read or write: it must
// be owned by the user running zero502 (or root), with no permission for group or others, below
// directories only its owner or root can write (infra/trust).
func ReadFile(path string) (map[string]Value, error) {
	if err := trust.CheckPrivate(path, os.Getuid()); err != nil {
		return nil, fmt.Errorf("secrets.file: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets.file %s: %w", path, err)
	}
	return ParseDotenv(data, "secrets.file "+path)
}

// maxCommandOutput bounds what secrets.command may print.
const maxCommandOutput = 1 << 20

func runCommand(ctx context.Context, argv []string, timeout time.Duration) (map[string]Value, error) {
	if timeout <= 0 {
		timeout = boundedcmd.DefaultTimeout
	}
	// Its program, and a script it is given, must be ones only root or this user can change
	// (infra/trust), as a hook's: it sees every secret it prints.
	prog, err := trust.Command(argv, "", os.Getuid())
	if err != nil {
		var notFound *exec.Error
		if errors.As(err, &notFound) {
			return nil, fmt.Errorf("secrets.command %q: %w; give secrets.command an absolute path or put the program on PATH", argv[0], err)
		}
		return nil, fmt.Errorf("secrets.command %s: %w", argv[0], err)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Args[0] = argv[0]                       // the file checked runs, under the name it was given (busybox picks its applet by it)
	cmd.Env = boundedcmd.ChildEnv(os.Environ()) // it fetches the services' secrets, and needs none of zero502's own
	var stdout, stderr bytes.Buffer
	out := &limited{b: &stdout, n: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = out, &limited{b: &stderr, n: 4 << 10}
	boundedcmd.Bound(cmd) // a child it leaves (a prompt) dies with it at the timeout, not later
	err = cmd.Run()
	if parent.Err() != nil { // the deploy was called off (or its own deadline passed), not this timeout
		return nil, fmt.Errorf("secrets.command %s: stopped: %w", argv[0], parent.Err())
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("secrets.command %s: no answer within %s; check that it does not wait for input (a password prompt)", argv[0], timeout)
	}
	if out.over {
		// cut short, its last value would be another value: nothing of it is taken
		return nil, fmt.Errorf("secrets.command %s printed more than %d bytes: none of its output is taken; print only the variables the services need", argv[0], maxCommandOutput)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			// Its standard error is shown (a password manager says why it refused), without what
			// it quotes (jq quotes the input it failed on: a secret); its output, which may hold
			// values, never is.
			return nil, fmt.Errorf("secrets.command %s exited %d: %s", argv[0], ee.ExitCode(), withholdQuoted(strings.TrimSpace(stderr.String())))
		}
		return nil, fmt.Errorf("secrets.command %s: %w", argv[0], err)
	}
	return ParseDotenv(stdout.Bytes(), "the output of secrets.command "+argv[0])
}

// quoted is text in single, double or back quotes, on one line.
var quoted = regexp.MustCompile("'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")

// withholdQuoted is s with what it quotes replaced by "'…'": a failing command's message, which
// may quote the secret it failed on.
func withholdQuoted(s string) string {
	return quoted.ReplaceAllString(s, "'…'")
}

// limited keeps the first n bytes written to it and drops the rest, noting that it did (over).
type limited struct {
	b    *bytes.Buffer
	n    int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	room := l.n - l.b.Len()
	if len(p) > room {
		l.over = true
	}
	if room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
