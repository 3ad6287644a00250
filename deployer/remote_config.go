package deployer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/zero502/zero502/infra"
)

// ConfigEnd is the line that ends the config the deployer sends to `zero502 host … --config -`
// over ssh. A YAML comment, so the config stays valid YAML; after it, stdin stays open for as
// long as the deployer is connected, and its end (EOF) tells the host its deployer is gone.
const ConfigEnd = "# zero502: end of config"

// EncodeConfig renders cfg as YAML that infra.LoadBytes reads back to the same Config: every
// key under its config name, durations with their unit. The deployer sends it to a remote host,
// which therefore needs no copy of the config file (and sees the deployer's ZERO502_* overrides).
func EncodeConfig(cfg *infra.Config) ([]byte, error) {
	m, err := encodeValue(reflect.ValueOf(*cfg))
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(m)
}

var durType = reflect.TypeOf(time.Duration(0))

func encodeValue(v reflect.Value) (any, error) {
	if v.Type() == durType {
		return time.Duration(v.Int()).String(), nil
	}
	switch v.Kind() {
	case reflect.Struct:
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name := f.Tag.Get("mapstructure")
			fv, err := encodeValue(v.Field(i))
			if f.Anonymous && name == ",squash" { // its keys sit at this level (balancer's numbers)
				if err != nil {
					return nil, err
				}
				maps.Copy(out, fv.(map[string]any))
				continue
			}
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s.%w", name, err)
			}
			if fv != nil {
				out[name] = fv
			}
		}
		return out, nil
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		out := make([]any, 0, v.Len())
		for i := 0; i < v.Len(); i++ {
			ev, err := encodeValue(v.Index(i))
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		return out, nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[fmt.Sprint(k.Interface())] = v.MapIndex(k).Interface()
		}
		return out, nil
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		return v.Interface(), nil
	}
	return nil, fmt.Errorf("%s: cannot encode a %s for a remote host (teach deployer.EncodeConfig about it)", v.Type(), v.Kind())
}

// ReadConfigStream reads a config from r up to the ConfigEnd line (framed: the sender stays
// connected, r's end will mean it is gone) or to r's end (a file piped in by hand).
func ReadConfigStream(r *bufio.Reader) (data []byte, framed bool, err error) {
	var buf bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if bytes.Equal(bytes.TrimRight([]byte(line), "\r\n"), []byte(ConfigEnd)) {
			return buf.Bytes(), true, nil
		}
		buf.WriteString(line)
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read the config from stdin: %w", err)
		}
	}
}
