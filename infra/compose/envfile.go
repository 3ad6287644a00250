package compose

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// fromEnvironment are the names the env_file at path (read as Compose reads it, by compose-go's
// dotenv parser) takes from the environment instead of giving them a value: a bare NAME (Compose:
// the shell's NAME, at `up`), or NAME set to its own variable ($NAME, ${NAME}, ${NAME?…},
// ${NAME:?…}), as valueless says of an environment section. A default of the file's
// (${NAME:-…}) is a value. A file that is not there, or does not parse, gives none: the loader
// reports it.
func fromEnvironment(path string) map[string]bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	// every variable is set, to a mark of its own: a value that is its own name's mark is the
	// environment's, passed through
	mark := func(name string) string { return "\x00zero502 environment\x00" + name }
	set, err := dotenv.ParseWithLookup(bytes.NewReader(data), func(name string) (string, bool) { return mark(name), true })
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for name, v := range set {
		if v != mark(name) {
			continue
		}
		// and with name empty: a default gives its value; a bare name, ${NAME} and ${NAME?…} give
		// "", ${NAME:?…} fails
		empty, err := dotenv.ParseWithLookup(bytes.NewReader(data), func(n string) (string, bool) {
			if n == name {
				return "", true
			}
			return mark(n), true
		})
		if err != nil || empty[name] == "" {
			out[name] = true
		}
	}
	return out
}

// compose-go's dotenv parser (the .env beside the file, an env_file) quotes, in an error, the
// text it stopped at: a variable's value, a secret's (a password whose quote is not closed).
var (
	unterminated = regexp.MustCompile(`failed to read (.+?): line \d+: unterminated quoted value ([^\n]*)`)
	badName      = regexp.MustCompile(`(line \d+): unexpected character ("(?:[^"\\]|\\.)*") in variable name "(?:[^"\\]|\\.)*"`)
	badTemplate  = regexp.MustCompile(`failed to read (.+?): Invalid template: ("(?:[^"\\]|\\.)*")`)
)

// withoutValues is text, an error of the Compose loader, with each dotenv parse error's quote of
// the file replaced by what is wrong, the file and its line, and what to do; it says whether it
// replaced one. (compose-go's line for a quote not closed is the file's end: the line given is
// the quote's, found in the file.)
func withoutValues(text string) (string, bool) {
	out := unterminated.ReplaceAllStringFunc(text, func(m string) string {
		g := unterminated.FindStringSubmatch(m)
		return fmt.Sprintf("failed to read %s: %s: a quoted value is not closed (its text is not shown: it may be a secret): "+
			"end the value with the quote it starts with, and escape a quote inside it with a backslash", g[1], lineOf(g[1], g[2]))
	})
	out = badName.ReplaceAllString(out, "$1: unexpected character $2 in a variable's name (the line is not shown: it may hold "+
		"a secret): a name is letters, digits and _ . - [ ], then = and the value; or a quoted value above ends earlier than meant")
	out = badTemplate.ReplaceAllStringFunc(out, func(m string) string {
		g := badTemplate.FindStringSubmatch(m)
		value, err := strconv.Unquote(g[2])
		if err != nil {
			value = ""
		}
		return fmt.Sprintf("failed to read %s: %s: a value holds a $ that starts no ${NAME} (its text is not shown: it may be "+
			"a secret): write $$ for a literal $, or quote the value with single quotes", g[1], lineOf(g[1], value))
	})
	return out, out != text
}

// lineOf is "line N" of the file at path where text (a fragment of a line) last starts, or "a
// line" when the file does not hold it (or cannot be read).
func lineOf(path, text string) string {
	data, err := os.ReadFile(path)
	if text == "" || err != nil {
		return "a line"
	}
	i := strings.LastIndex(string(data), text)
	if i < 0 {
		return "a line"
	}
	return "line " + strconv.Itoa(1+strings.Count(string(data[:i]), "\n"))
}
