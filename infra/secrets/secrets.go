// Package secrets owns the values of services[].secrets: where a deploy finds them (a dotenv
// file only its owner may read, a command such as a password manager's CLI, the deploy job's
// environment), the one form a value travels in (Value, which never prints), and the digest a
// published spec records in its place, so that a changed secret is a changed spec and an
// unchanged one is not. Values never land in the config, a spec, a report, an event or argv.
package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
)

// Value is a secret's value. It prints, formats and marshals as Redacted: only an explicit
// string(v) gives the value, where a service's environment is built.
type Value string

// Redacted is what a Value shows wherever it is printed.
const Redacted = "[secret]"

func (Value) String() string   { return Redacted }
func (Value) GoString() string { return Redacted }

// MarshalJSON writes Redacted: a Value in a report or an event never carries its value.
func (Value) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// namePattern is what a secret's name must be: an environment variable's name.
var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidName reports whether name can be a secret's name (an environment variable's).
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Digest is what a published spec records for secret name holding value: the first 16 bytes of
// SHA-256 over both, in hex. Equal values give equal digests (an unchanged secret is not a
// change); the spec holding it is readable by its owner alone.
func Digest(name string, value Value) string {
	sum := sha256.Sum256([]byte("zero502 secret\x00" + name + "\x00" + string(value)))
	return hex.EncodeToString(sum[:16])
}

// sortedNames are the names of values in order.
func sortedNames(values map[string]Value) []string {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
