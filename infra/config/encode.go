package config

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Encode renders cfg as the YAML that LoadBytes reads back to the same Config: the reading half
// of the codec is LoadBytes, this is the writing half. Every key is written under its config name
// (the mapstructure tag; the fields of a `,squash` embedded struct inline in their parent), in
// the order Config declares them, durations as Go duration strings ("1.5s", "250ms"). A nil list
// or map is left out, so it loads back nil (or the default); an empty one is written empty.
//
// The deployer sends the result to a remote host over ssh; the demo writes its fleet with it;
// anything that must produce a config builds a typed Config and encodes it, never YAML by hand.
func Encode(cfg *Config) ([]byte, error) {
	n, err := encodeNode(reflect.ValueOf(*cfg), "")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2) // as the shipped configs are written
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("encode the config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode the config: %w", err)
	}
	return out.Bytes(), nil
}

// encodeNode is the YAML node of v, found at key (for error messages).
func encodeNode(v reflect.Value, key string) (*yaml.Node, error) {
	if v.Type() == durationType {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: time.Duration(v.Int()).String()}, nil
	}
	switch v.Kind() {
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		if err := encodeFields(m, v, key); err != nil {
			return nil, err
		}
		return m, nil
	case reflect.Slice:
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for i := 0; i < v.Len(); i++ {
			item, err := encodeNode(v.Index(i), fmt.Sprintf("%s[%d]", key, i))
			if err != nil {
				return nil, err
			}
			if item.Kind != yaml.ScalarNode {
				seq.Style = 0 // a list of sections reads best in block style
			}
			seq.Content = append(seq.Content, item)
		}
		return seq, nil
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("key %s: a map keyed by %s has no YAML form zero502 reads; key it by string", key, v.Type().Key())
		}
		m := &yaml.Node{Kind: yaml.MappingNode}
		names := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			names = append(names, k.String())
		}
		slices.Sort(names)
		for _, name := range names {
			val, err := encodeNode(v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key())), key+"."+name)
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, scalar(name), val)
		}
		return m, nil
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		n := &yaml.Node{}
		if err := n.Encode(v.Interface()); err != nil {
			return nil, fmt.Errorf("key %s: %w", key, err)
		}
		return n, nil
	}
	return nil, fmt.Errorf("key %s: a %s has no YAML form in config.Encode; give the field a type Encode writes (text, number, duration, list, section)", key, v.Type())
}

// encodeFields appends the key/value pairs of struct v to mapping m: a field under its
// mapstructure name, a `,squash` field's own fields inline, a nil list or map not at all.
func encodeFields(m *yaml.Node, v reflect.Value, key string) error {
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		fv := v.Field(i)
		if slices.Contains(strings.Split(opts, ","), "squash") {
			if fv.Kind() != reflect.Struct {
				return fmt.Errorf("key %s: field %s is squashed but is a %s, not a struct", key, f.Name, fv.Type())
			}
			if err := encodeFields(m, fv, key); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			return fmt.Errorf("key %s: field %s has no mapstructure name; tag it with its config key", key, f.Name)
		}
		if (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil() {
			continue
		}
		sub := name
		if key != "" {
			sub = key + "." + name
		}
		val, err := encodeNode(fv, sub)
		if err != nil {
			return err
		}
		if r, ok := v.Interface().(Rollout); ok {
			// As it was written: the share, not the hosts it came to.
			if sub == "rollout.batch" && r.BatchShare > 0 {
				val = scalar(fmt.Sprintf("%d%%", r.BatchShare))
			}
			if sub == "rollout.max_unavailable" && r.MaxUnavailableShare > 0 {
				val = scalar(fmt.Sprintf("%d%%", r.MaxUnavailableShare))
			}
		}
		m.Content = append(m.Content, scalar(name), val)
	}
	return nil
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}
