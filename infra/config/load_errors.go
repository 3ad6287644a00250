package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"
)

// decodeProblems turns the decoder's errors into the config's language: the key as written in
// the file (services[0].command), the value, what it must be, and, when an environment override
// set the key, the variable instead of the file. fromEnv is true when every problem came from
// the environment: the file is then not to blame.
func decodeProblems(err error, environ []string) (problems error, fromEnv bool) {
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, sub := range j.Unwrap() {
				walk(sub)
			}
			return
		}
		leaves = append(leaves, e)
	}
	walk(err)
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var msgs []string
	fromEnv = true
	for _, e := range leaves {
		var de *mapstructure.DecodeError
		if !errors.As(e, &de) {
			msgs, fromEnv = append(msgs, e.Error()), false
			continue
		}
		key := de.Name()
		rule := ruleOf(de.Unwrap(), secretKeys[key])
		if name := EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_")); env[name] != "" {
			value := env[name]
			if secretKeys[key] {
				value = notShown
			}
			if strings.HasPrefix(rule, "must be a list") {
				msgs = append(msgs, fmt.Sprintf("environment variable %s=%s: %s is a list, which cannot be set from the environment "+
					"(a variable holds text); unset it and set %s in the config file", name, value, key, key))
				continue
			}
			msgs = append(msgs, fmt.Sprintf("environment variable %s=%s (it sets %s): %s; fix or unset it", name, value, key, rule))
			continue
		}
		fromEnv = false
		msgs = append(msgs, fmt.Sprintf("key %s: %s", key, rule))
	}
	sort.Strings(msgs)
	return errors.New(strings.Join(msgs, "; ")), fromEnv && len(msgs) > 0
}

// secretKeys are the keys whose values are secrets: a refusal names the key and the rule, never
// the value (notShown stands for it).
var secretKeys = map[string]bool{"balancer.admin_token": true}

// notShown stands for a secret's value in an error.
const notShown = "(set, not shown)"

// ruleOf says what is wrong with a value, in words about the value, not about Go types; secret
// leaves the value out.
func ruleOf(err error, secret bool) string {
	var conv *mapstructure.UnconvertibleTypeError
	if errors.As(err, &conv) {
		value := any(conv.Value)
		if secret {
			value = notShown
		}
		return fmt.Sprintf("%v is %s; it must be %s", value, kindWord(reflect.TypeOf(conv.Value)), kindWord(conv.Expected.Type()))
	}
	msg := err.Error()
	if got, ok := strings.CutPrefix(msg, "source data must be an array or slice, got "); ok {
		return fmt.Sprintf("must be a list, e.g. [\"a\", \"b\"], not %s", article(got))
	}
	if strings.HasPrefix(msg, "cannot parse") {
		var pe *mapstructure.ParseError
		if errors.As(err, &pe) && !secret {
			return fmt.Sprintf("%v is not %s", pe.Value, kindWord(pe.Expected.Type()))
		}
	}
	if secret {
		return notShown + " must be " + kindWord(reflect.TypeOf(""))
	}
	return msg
}

// kindWord names a type as a config author knows it.
func kindWord(t reflect.Type) string {
	if t == nil {
		return "empty"
	}
	if t == durationType {
		return "a duration with a unit (5s, 250ms)"
	}
	switch t.Kind() {
	case reflect.String:
		return "text (quote a value that looks like a number or a boolean: \"1\", \"true\")"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a section of key: value lines"
	}
	return t.Kind().String()
}

func article(kind string) string {
	switch kind {
	case "string":
		return "text (write it as a list of words: [\"{self}\", \"app\"])"
	case "map":
		return "a section"
	case "int", "int64", "float64", "uint64":
		return "a number"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// envValuesAreText refuses a services[].env value that is not text (DEBUG: 1), naming the
// variable as written: the decoder would fold its name to lower case.
func envValuesAreText(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var raw struct {
		Services []struct {
			Env map[string]any `yaml:"env"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil // the decoder reports the shape
	}
	var errs []error
	for i, s := range raw.Services {
		names := make([]string, 0, len(s.Env))
		for k := range s.Env {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if v := s.Env[k]; v != nil {
				if _, ok := v.(string); !ok {
					errs = append(errs, fmt.Errorf("key services[%d].env.%s: %v is %s; an environment value must be text: quote it (%s: \"%v\")",
						i, k, v, kindWord(reflect.TypeOf(v)), k, v))
				}
			}
		}
	}
	return errors.Join(errs...)
}
