package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/zero502/zero502/infra/config"
)

// number is one timing number written in a shipped config file.
type number struct {
	file       string // examples/production.yaml
	key        string // drain.window
	raw        string // 15s, as written
	isDuration bool
	isShare    bool // a share of the fleet in percent, "34%" (rollout.batch): its key gets a % (rollout.batch%)
	line, col  int  // of the value, 1-based
}

func (n number) format(v int64) string {
	switch {
	case n.isDuration:
		return (time.Duration(v) * time.Millisecond).String()
	case n.isShare:
		return strconv.FormatInt(v, 10) + "%"
	}
	return strconv.FormatInt(v, 10)
}

// timingNumbers lists every duration, whole number and share ("34%", keyed rollout.batch%) in
// the sections of a config file and in the mappings nested in them, block or flow style (rollout.analysis.window in
// `analysis: {window: 3500ms}`); services and hosts are lists of names, images and ports, not
// timing numbers.
func timingNumbers(name string, data []byte) ([]number, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a mapping of sections", name)
	}
	var out []number
	top := doc.Content[0].Content
	for i := 0; i+1 < len(top); i += 2 {
		out = appendNumbers(out, name, top[i].Value, top[i+1])
	}
	return out, nil
}

// appendNumbers appends the numbers of the mapping body under key prefix, and of every mapping
// nested in it.
func appendNumbers(out []number, file, prefix string, body *yaml.Node) []number {
	if body.Kind != yaml.MappingNode {
		return out
	}
	for j := 0; j+1 < len(body.Content); j += 2 {
		k, v := body.Content[j], body.Content[j+1]
		key := prefix + "." + k.Value
		if v.Kind == yaml.MappingNode {
			out = appendNumbers(out, file, key, v)
			continue
		}
		if v.Kind != yaml.ScalarNode || v.Style != 0 {
			continue
		}
		n := number{file: file, key: key, raw: v.Value, line: v.Line, col: v.Column}
		if _, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
			out = append(out, n)
		} else if _, err := time.ParseDuration(v.Value); err == nil {
			n.isDuration = true
			out = append(out, n)
		} else if p, ok := strings.CutSuffix(v.Value, "%"); ok {
			if _, err := strconv.ParseInt(p, 10, 64); err == nil {
				n.isShare, n.key = true, key+"%"
				out = append(out, n)
			}
		}
	}
	return out
}

// replace writes value in place of n's value in data, leaving every other byte as it was.
func replace(data []byte, n number, value string) ([]byte, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if n.line < 1 || n.line > len(lines) {
		return nil, fmt.Errorf("%s:%d: no such line", n.file, n.line)
	}
	l := lines[n.line-1]
	start, end := n.col-1, n.col-1+len(n.raw)
	if end > len(l) || string(l[start:end]) != n.raw {
		return nil, fmt.Errorf("%s:%d:%d: expected %q", n.file, n.line, n.col, n.raw)
	}
	var out bytes.Buffer
	for i, x := range lines {
		if i == n.line-1 {
			out.Write(l[:start])
			out.WriteString(value)
			out.Write(l[end:])
			continue
		}
		out.Write(x)
	}
	return out.Bytes(), nil
}

// configMutants makes, for every timing number of every shipped config that takes part in an
// invariant that applies to that config (no edge: no I6; no drain: balancer: no I9), a copy with
// the number at the invariant's boundary and one at a typical wrong value, and, for a duration
// in a product or sum that breaks the relation as it grows, one at the largest duration, where
// that product or sum overflows time.Duration (relation.overflows). Numbers in no
// applicable invariant come back in unused; mutants that do not load come back not viable.
func configMutants(examplesDir, tmp string) (mutants []*mutant, unused []string, err error) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, nil, fmt.Errorf("no shipped configs in %s (%v)", examplesDir, err)
	}
	for _, path := range files {
		name := "examples/" + filepath.Base(path)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		cfg, err := config.LoadBytes(data, name)
		if err != nil {
			return nil, nil, fmt.Errorf("shipped config does not load: %w", err)
		}
		vals := numbers(cfg)
		nums, err := timingNumbers(name, data)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range nums {
			used := false
			for _, r := range applicable(cfg) {
				if !r.uses(n.key) {
					continue
				}
				used = true
				boundary, wrong := r.boundary(n.key, vals)
				cases := []struct {
					kind  string
					value int64
				}{{"boundary", boundary}, {"wrong value", wrong}}
				if n.isDuration && r.overflows(n.key, vals) {
					cases = append(cases, struct {
						kind  string
						value int64
					}{"overflow", maxMillis})
				}
				for _, c := range cases {
					if c.kind == "wrong value" && c.value == boundary {
						continue
					}
					m := &mutant{
						invariant: r.id,
						kind:      "config",
						label: fmt.Sprintf("%s %s %s → %s (%s)", n.file, n.key, n.raw,
							n.format(c.value), c.kind),
					}
					mutants = append(mutants, m)
					mdata, err := replace(data, n, n.format(c.value))
					if err != nil {
						return nil, nil, err
					}
					if _, err := config.LoadBytes(mdata, name); err != nil {
						m.result, m.detail = notViable, firstLine(err.Error())
						continue
					}
					m.configPath = filepath.Join(tmp, fmt.Sprintf("config-%03d-%s", len(mutants), filepath.Base(path)))
					if err := os.WriteFile(m.configPath, mdata, 0o644); err != nil {
						return nil, nil, err
					}
				}
			}
			if !used {
				unused = append(unused, fmt.Sprintf("%s %s %s", n.file, n.key, n.raw))
			}
		}
	}
	return mutants, unused, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
