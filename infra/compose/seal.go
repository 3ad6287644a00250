package compose

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/compose-spec/compose-go/v2/cli"
)

// A seal stands in for the secrets' values while the file is read. Compose interpolates a
// variable everywhere it is named, the secret's too (one a service lists without a value: it
// becomes one of services[].secrets), so the loader is given, for each secret, a token of its own
// (random, for this load) instead of its value: the value reaches nothing the import makes. A
// token in a note or a loader error is put back as ${NAME}; one in anything the import writes is
// refused (secretIn), since the config, the spec, the container's command and its logs are no
// place for a secret.
type seal struct {
	tokens  map[string]string // a secret's name: its token
	secrets map[string]string // a token: its secret's name
}

// tokenPattern is what a token looks like: lowercase letters and digits, so that no Compose key
// splits or changes it (a project name is lowercased, a URL's path ends at a quote).
var tokenPattern = regexp.MustCompile(`zero502secret[0-9a-f]{32}`)

// newSeal draws a token for each of names.
func newSeal(names map[string]bool) *seal {
	s := &seal{tokens: map[string]string{}, secrets: map[string]string{}}
	for name := range names {
		b := make([]byte, 16)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		t := "zero502secret" + hex.EncodeToString(b)
		s.tokens[name], s.secrets[t] = t, name
	}
	return s
}

// sealed says whether name's value is a token.
func (s *seal) sealed(name string) bool {
	_, ok := s.tokens[name]
	return ok
}

// option gives the loader each secret's token as the variable's value. It comes after the
// environment and before the .env file: a variable of .env that names a secret (${NAME}) takes
// its token, and a secret set in .env only keeps it (the environment wins over .env).
func (s *seal) option(o *cli.ProjectOptions) error {
	for _, name := range slices.Sorted(maps.Keys(s.tokens)) {
		o.Environment[name] = s.tokens[name]
	}
	return nil
}

// open is text with each token put back as the ${NAME} the file wrote.
func (s *seal) open(text string) string {
	return tokenPattern.ReplaceAllStringFunc(text, func(t string) string {
		if name, ok := s.secrets[t]; ok {
			return "${" + name + "}"
		}
		return t
	})
}

// secretIn is the name of the first secret whose token one of values holds ("" for none).
func (s *seal) secretIn(values ...string) string {
	for _, v := range values {
		for _, t := range tokenPattern.FindAllString(v, -1) {
			if name, ok := s.secrets[t]; ok {
				return name
			}
		}
	}
	return ""
}

// refusal is the error for a Compose field (services.NAME.KEY) that interpolates secret name.
func refusal(field, name string) error {
	return fmt.Errorf("%s: interpolates secret %s: a secret reaches the container only as its environment variable "+
		"(services[].secrets), never in the config, the spec, argv or a log; read it from the environment in the "+
		"program (or a shell form: sh -c '... \"$%s\"')", field, name, name)
}

// sealedError is an error of the loader with each token put back as ${NAME}; what it wraps holds
// tokens, never a secret's value (an error that quoted an env file's value wraps nothing).
type sealedError struct {
	text string
	err  error
}

func (e *sealedError) Error() string { return e.text }
func (e *sealedError) Unwrap() error { return e.err }

// wrap is err, of the loader reading path, with its tokens opened and the values an env file's
// parse error quotes left out (withoutValues). An error about a secret's token (a port or a count
// the file interpolates a secret into: the loader cannot parse the token) says the variable is a
// secret, and why.
func (s *seal) wrap(path string, err error) error {
	sealed, unquoted := withoutValues(err.Error())
	text := s.open(sealed)
	if name := s.secretIn(sealed); name != "" {
		text += fmt.Sprintf(" (%s is a secret: the file lists it without a value or sets it to ${%s}, so the import takes it from "+
			"the environment at each deploy, as Compose does at up; a secret reaches the container only as its environment variable, "+
			"never a port, a count or another field: write the value there, or use another variable)", name, name)
	}
	if unquoted {
		err = nil // it quotes a value of the file: nothing shows it, errors.Unwrap neither
	}
	return fmt.Errorf("compose file %s: %w", path, &sealedError{text: text, err: err})
}
