package secrets

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// ParseDotenv reads dotenv text: NAME=value lines, an optional leading "export ", blank lines
// and # comments skipped; a value in double quotes may hold \n, \r, \t, \" and \\ escapes, one in
// single quotes is taken as written, an unquoted one is trimmed and ends at " #". An error names
// the source and the line, never a value.
func ParseDotenv(data []byte, source string) (map[string]Value, error) {
	out := map[string]Value{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, raw, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || !ValidName(name) {
			return nil, fmt.Errorf("%s line %d: want NAME=value with NAME a variable name ([A-Za-z_][A-Za-z0-9_]*)", source, n)
		}
		v, err := dotenvValue(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("%s line %d (%s): %w", source, n, name, err)
		}
		out[name] = Value(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return out, nil
}

func dotenvValue(raw string) (string, error) {
	switch {
	case strings.HasPrefix(raw, `"`):
		var b strings.Builder
		for i := 1; i < len(raw); i++ {
			c := raw[i]
			switch {
			case c == '"':
				if rest := strings.TrimSpace(raw[i+1:]); rest != "" && !strings.HasPrefix(rest, "#") {
					return "", fmt.Errorf("text after the closing double quote")
				}
				return b.String(), nil
			case c == '\\' && i+1 < len(raw):
				i++
				switch raw[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case '"', '\\':
					b.WriteByte(raw[i])
				default:
					b.WriteByte('\\')
					b.WriteByte(raw[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", fmt.Errorf("no closing double quote")
	case strings.HasPrefix(raw, `'`):
		end := strings.IndexByte(raw[1:], '\'')
		if end < 0 {
			return "", fmt.Errorf("no closing single quote")
		}
		if rest := strings.TrimSpace(raw[end+2:]); rest != "" && !strings.HasPrefix(rest, "#") {
			return "", fmt.Errorf("text after the closing single quote")
		}
		return raw[1 : end+1], nil
	}
	if i := strings.Index(raw, " #"); i >= 0 {
		raw = raw[:i]
	}
	return strings.TrimSpace(raw), nil
}

// FormatDotenv writes values as dotenv text ParseDotenv reads back exactly, names in order.
func FormatDotenv(values map[string]Value) []byte {
	var b bytes.Buffer
	for _, name := range sortedNames(values) {
		v := string(values[name])
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`)
		fmt.Fprintf(&b, "%s=\"%s\"\n", name, r.Replace(v))
	}
	return b.Bytes()
}
