package config

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/examples"
)

var updateLoaded = flag.Bool("update-loaded", false, "rewrite testdata/loaded/*.keys from the configs as they load now")

// Every shipped config (and the embedded defaults alone) loads to exactly the values recorded
// in testdata/loaded, key by key: a change to how Config is laid out in Go (an embedded type, a
// moved field) must not change what a user's file means.
func TestShippedConfigsLoadAsRecorded(t *testing.T) {
	names, err := fs.Glob(examples.Files, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shipped configs: %v", err)
	}
	for _, name := range append([]string{"defaults"}, names...) {
		t.Run(name, func(t *testing.T) {
			var c *Config
			if name == "defaults" {
				c = Defaults()
			} else {
				data, err := fs.ReadFile(examples.Files, name)
				if err != nil {
					t.Fatal(err)
				}
				if c, err = LoadBytes(data, name); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			got := strings.Join(keyValues(reflect.ValueOf(*c), ""), "\n") + "\n"
			golden := filepath.Join("testdata", "loaded", strings.TrimSuffix(name, ".yaml")+".keys")
			if *updateLoaded {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./infra/config -run TestShippedConfigsLoadAsRecorded -update-loaded once to record it)", err)
			}
			if got != string(want) {
				t.Errorf("%s loads differently than recorded in %s:\n%s", name, golden, lineDiff(string(want), got))
			}
		})
	}
}

// keyValues renders v as sorted "key.path = value" lines under the config's own key names
// (mapstructure tags; a squashed embedded struct adds no level).
func keyValues(v reflect.Value, prefix string) []string {
	var out []string
	switch {
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		out = append(out, fmt.Sprintf("%s = %s", prefix, time.Duration(v.Int())))
	case v.Kind() == reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			if name == "-" {
				continue // not a config key: filled at load or by the deployer
			}
			key := prefix
			if !(f.Anonymous && opts == "squash") {
				key = strings.TrimPrefix(prefix+"."+name, ".")
			}
			out = append(out, keyValues(v.Field(i), key)...)
		}
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			out = append(out, fmt.Sprintf("%s = []", prefix))
		}
		for i := 0; i < v.Len(); i++ {
			out = append(out, keyValues(v.Index(i), fmt.Sprintf("%s[%d]", prefix, i))...)
		}
	case v.Kind() == reflect.Map:
		if v.Len() == 0 {
			out = append(out, fmt.Sprintf("%s = {}", prefix))
		}
		for _, k := range v.MapKeys() {
			out = append(out, keyValues(v.MapIndex(k), fmt.Sprintf("%s.%v", prefix, k))...)
		}
	default:
		out = append(out, fmt.Sprintf("%s = %#v", prefix, v.Interface()))
	}
	sort.Strings(out)
	return out
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
