// Package configdoc owns docs/config.md, the config reference, and generates it from the code:
// the YAML keys are the mapstructure tags of config.Config and of the struct types it reaches in
// package config, the meaning of each key is its field's doc comment, and its default is its value
// in the embedded defaults (infra/config/defaults.yaml). It reads package config's Go source with
// go/parser (it does not import infra), so a field, a comment or a default changed in infra
// changes the reference: `go generate ./infra/config` writes it, and TestDocsConfigIsUpToDate fails
// while docs/config.md differs from what Generate makes.
//
// A config field without a doc comment is an error (Generate names every such field), and so is
// a key of the defaults file that no field declares.
package configdoc

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Command is how docs/config.md is regenerated, from the repository's root; it is what the
// //go:generate line of package config runs, and what a stale docs/config.md asks for.
const Command = "go generate ./infra/config"

// noDefault is the default shown for a key the defaults file does not set: a section (its keys
// have their own rows) or a key of a list item (services[].…, hosts[].…), whose default, if any,
// is filled in at load and said in its meaning.
const noDefault = "—"

// Row is one key of the config.
type Row struct {
	Key     string // the dotted YAML key: balancer.interval, services[].health.path
	Type    string // the Go type, simply: duration, int, string, bool, number, list of string, section…
	Default string // its value in the defaults file, as YAML writes it; NoDefault when unset there
	Doc     string // the field's doc comment, on one line
	Field   string // the Go field: Balancer.Listen
}

// Section is one top-level key of the config and the keys under it.
type Section struct {
	Key  string // balancer, drain, services, services_from…
	Doc  string // the doc comment of config.Config's field
	Rows []Row  // every key under it; the key itself when it is a scalar (services_from)
}

// envVar is a ZERO502_* environment variable that is not a config key (config.EnvNotConfig).
type envVar struct {
	Names []string // several names that share one comment
	Doc   string   // the comment beside them in infra/config/envother.go
}

// Reference is the config reference: what docs/config.md renders.
type Reference struct {
	EnvPrefix   string // config.EnvPrefix: ZERO502
	DefaultPath string // config.DefaultPath: ./zero502.yaml
	Extension   string // config.ExtensionPrefix: x-
	Sections    []Section
	OtherEnv    []envVar
}

// Generate reads package config in dir (its .go files but the tests, and defaults.yaml) and
// returns docs/config.md.
func Generate(dir string) ([]byte, error) {
	ref, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return ref.Markdown(), nil
}

// Load reads package config in dir into its Reference.
func Load(dir string) (*Reference, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sources := map[string][]byte{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		sources[filepath.Base(n)] = b
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("configdoc: no Go source in %s (want package config's directory)", dir)
	}
	defaults, err := os.ReadFile(filepath.Join(dir, "defaults.yaml"))
	if err != nil {
		return nil, fmt.Errorf("configdoc: %w", err)
	}
	return fromSource(sources, defaults)
}

// fromSource builds the Reference from package config's Go files (name → content) and its
// defaults file.
func fromSource(sources map[string][]byte, defaults []byte) (*Reference, error) {
	fset := token.NewFileSet()
	files := make([]*ast.File, 0, len(sources))
	names := make([]string, 0, len(sources))
	for n := range sources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, sources[n], parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("configdoc: %w", err)
		}
		files = append(files, f)
	}
	var def yaml.Node
	if err := yaml.Unmarshal(defaults, &def); err != nil {
		return nil, fmt.Errorf("configdoc: defaults.yaml: %w", err)
	}
	var root *yaml.Node
	if len(def.Content) > 0 {
		root = def.Content[0]
	}

	w := walker{types: map[string]*ast.StructType{}, other: map[string]ast.Expr{}, defaults: root}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok {
					w.types[ts.Name.Name] = st
				} else {
					w.other[ts.Name.Name] = ts.Type
				}
			}
		}
	}
	cfg, ok := w.types["Config"]
	if !ok {
		return nil, errors.New("configdoc: package config declares no struct type Config")
	}

	ref := &Reference{
		EnvPrefix:   constString(files, "EnvPrefix"),
		DefaultPath: constString(files, "DefaultPath"),
		Extension:   constString(files, "ExtensionPrefix"),
		OtherEnv:    envNotConfig(fset, files),
	}
	for _, f := range w.fields("Config", cfg, "") {
		sec := Section{Key: f.key, Doc: f.doc}
		rows := w.rows(f, map[string]bool{"Config": true})
		if f.typ.kind == kindScalar {
			sec.Rows = rows
		} else {
			sec.Rows = rows[1:] // the section itself is the heading and its paragraph
		}
		ref.Sections = append(ref.Sections, sec)
	}

	var problems []string
	if len(w.undocumented) > 0 {
		problems = append(problems, "fields without a doc comment (document each in package config): "+strings.Join(w.undocumented, ", "))
	}
	known := map[string]bool{}
	for _, s := range ref.Sections {
		known[s.Key] = true
		for _, r := range s.Rows {
			known[r.Key] = true
		}
	}
	var unknown []string
	for _, k := range yamlKeys(root, "") {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		problems = append(problems, "keys of defaults.yaml that no field of config.Config declares: "+strings.Join(unknown, ", "))
	}
	if len(problems) > 0 {
		return nil, errors.New("configdoc: " + strings.Join(problems, "; "))
	}
	return ref, nil
}

type kind int

const (
	kindScalar      kind = iota
	kindSection          // a struct type of package config
	kindSectionList      // a slice of one
)

type fieldType struct {
	kind       kind
	name       string // how the type is shown
	structName string // the struct type's name for a section or a list of sections
}

type field struct {
	goName string // Balancer.Listen
	key    string // the full key
	doc    string
	typ    fieldType
}

type walker struct {
	types        map[string]*ast.StructType
	other        map[string]ast.Expr // non-struct named types of package config
	defaults     *yaml.Node
	undocumented []string
}

// fields are the config fields of struct type name, with keys under prefix; an embedded struct
// (mapstructure ",squash", or untagged) puts its fields at this level.
func (w *walker) fields(name string, st *ast.StructType, prefix string) []field {
	var out []field
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			if s, err := strconv.Unquote(f.Tag.Value); err == nil {
				tag, _ = reflect.StructTag(s).Lookup("mapstructure")
			}
		}
		key, opts, _ := strings.Cut(tag, ",")
		if len(f.Names) == 0 { // embedded
			if key == "" || strings.Contains(","+opts+",", ",squash,") {
				if id, ok := f.Type.(*ast.Ident); ok {
					if sub, ok := w.types[id.Name]; ok {
						out = append(out, w.fields(id.Name, sub, prefix)...)
					}
				}
				continue
			}
		}
		if f.Tag == nil || key == "" || key == "-" {
			continue
		}
		doc := oneLine(f.Doc)
		if doc == "" {
			doc = oneLine(f.Comment)
		}
		goNames := []string{}
		for _, n := range f.Names {
			goNames = append(goNames, name+"."+n.Name)
		}
		if len(goNames) == 0 {
			goNames = []string{name + "." + typeString(f.Type)}
		}
		for _, g := range goNames {
			if doc == "" {
				w.undocumented = append(w.undocumented, fmt.Sprintf("%s (%s)", g, prefix+key))
			}
			out = append(out, field{goName: g, key: prefix + key, doc: doc, typ: w.typeOf(f.Type)})
		}
	}
	return out
}

// rows are f's row and, for a section or a list of sections, the rows of the keys under it.
// seen guards against a type that contains itself.
func (w *walker) rows(f field, seen map[string]bool) []Row {
	out := []Row{{Key: f.key, Type: f.typ.name, Default: w.defaultOf(f), Doc: f.doc, Field: f.goName}}
	if f.typ.kind == kindScalar || seen[f.typ.structName] {
		return out
	}
	prefix := f.key + "."
	if f.typ.kind == kindSectionList {
		prefix = f.key + "[]."
	}
	seen[f.typ.structName] = true
	for _, sub := range w.fields(f.typ.structName, w.types[f.typ.structName], prefix) {
		out = append(out, w.rows(sub, seen)...)
	}
	delete(seen, f.typ.structName)
	return out
}

// typeOf shows a field's type simply, and says whether it is a section.
func (w *walker) typeOf(e ast.Expr) fieldType {
	switch t := e.(type) {
	case *ast.StarExpr:
		return w.typeOf(t.X)
	case *ast.Ident:
		if _, ok := w.types[t.Name]; ok {
			return fieldType{kind: kindSection, name: "section", structName: t.Name}
		}
		if u, ok := w.other[t.Name]; ok {
			return w.typeOf(u)
		}
		return fieldType{name: basic(t.Name)}
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok && x.Name == "time" && t.Sel.Name == "Duration" {
			return fieldType{name: "duration"}
		}
		return fieldType{name: typeString(t)}
	case *ast.ArrayType:
		el := w.typeOf(t.Elt)
		if el.kind == kindSection {
			return fieldType{kind: kindSectionList, name: "list of sections", structName: el.structName}
		}
		return fieldType{name: "list of " + el.name}
	case *ast.MapType:
		return fieldType{name: "map of " + w.typeOf(t.Key).name + " to " + w.typeOf(t.Value).name}
	}
	return fieldType{name: typeString(e)}
}

func basic(name string) string {
	switch name {
	case "float32", "float64":
		return "number"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "int"
	}
	return name
}

func typeString(e ast.Expr) string {
	var b bytes.Buffer
	writeType(&b, e)
	return b.String()
}

func writeType(b *bytes.Buffer, e ast.Expr) {
	switch t := e.(type) {
	case *ast.Ident:
		b.WriteString(t.Name)
	case *ast.SelectorExpr:
		writeType(b, t.X)
		b.WriteString("." + t.Sel.Name)
	case *ast.StarExpr:
		b.WriteString("*")
		writeType(b, t.X)
	case *ast.ArrayType:
		b.WriteString("[]")
		writeType(b, t.Elt)
	case *ast.MapType:
		b.WriteString("map[")
		writeType(b, t.Key)
		b.WriteString("]")
		writeType(b, t.Value)
	default:
		fmt.Fprintf(b, "%T", e)
	}
}

// defaultOf is f's value in the defaults file, noDefault for a section, a list item's key or a
// key the file does not set.
func (w *walker) defaultOf(f field) string {
	if f.typ.kind == kindSection || strings.Contains(f.key, "[]") {
		return noDefault
	}
	n := w.defaults
	for _, part := range strings.Split(f.key, ".") {
		n = lookup(n, part)
	}
	if n == nil {
		return noDefault
	}
	return "`" + flow(n) + "`"
}

func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// flow writes a YAML value on one line, as a flow-style YAML value.
func flow(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == "" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			return strconv.Quote(n.Value)
		}
		return n.Value
	case yaml.SequenceNode:
		parts := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			parts = append(parts, flow(c))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case yaml.MappingNode:
		parts := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, n.Content[i].Value+": "+flow(n.Content[i+1]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case yaml.AliasNode:
		return flow(n.Alias)
	}
	return n.Value
}

// yamlKeys are the dotted keys of every mapping entry under n.
func yamlKeys(n *yaml.Node, prefix string) []string {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + n.Content[i].Value
		out = append(out, k)
		out = append(out, yamlKeys(n.Content[i+1], k+".")...)
	}
	return out
}

// oneLine is a doc comment's text on one line.
func oneLine(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// constString is the value of the package-level string constant name, "" when there is none.
func constString(files []*ast.File, name string) string {
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != name || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							return v
						}
					}
				}
			}
		}
	}
	return ""
}

// envNotConfig reads the names config.EnvNotConfig returns and the comments beside them: a
// comment on a name's line is its own, a comment on a line of its own is that of the names after
// it; consecutive names with one comment are one envVar.
func envNotConfig(fset *token.FileSet, files []*ast.File) []envVar {
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "EnvNotConfig" || fd.Recv != nil || fd.Body == nil {
				continue
			}
			var lit *ast.CompositeLit
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CompositeLit); ok && lit == nil {
					lit = c
				}
				return lit == nil
			})
			if lit == nil {
				return nil
			}
			line := func(p token.Pos) int { return fset.Position(p).Line }
			eltLines := map[int]bool{}
			for _, e := range lit.Elts {
				eltLines[line(e.Pos())] = true
			}
			var comments []*ast.CommentGroup
			for _, c := range f.Comments {
				if c.Pos() > lit.Lbrace && c.End() < lit.Rbrace {
					comments = append(comments, c)
				}
			}
			var out []envVar
			group := ""
			for _, e := range lit.Elts {
				bl, ok := e.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					continue
				}
				name, err := strconv.Unquote(bl.Value)
				if err != nil {
					continue
				}
				own := ""
				for _, c := range comments {
					switch {
					case c.End() < e.Pos() && !eltLines[line(c.Pos())]:
						group = oneLine(c) // a comment line of its own before this name
					case line(c.Pos()) == line(e.End()) && c.Pos() > e.End():
						own = oneLine(c)
					}
				}
				doc := own
				if doc == "" {
					doc = group
				}
				if n := len(out); n > 0 && own == "" && out[n-1].Doc == doc {
					out[n-1].Names = append(out[n-1].Names, name)
					continue
				}
				out = append(out, envVar{Names: []string{name}, Doc: doc})
			}
			return out
		}
	}
	return nil
}

// Markdown renders the reference as docs/config.md.
func (r *Reference) Markdown() []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	prefix := r.EnvPrefix
	p("# Config reference\n\n")
	p("<!-- Generated by internal/configdoc from package config: do not edit; run `%s`. -->\n\n", Command)
	p("This file is generated from the code: each key is a `mapstructure` tag of `config.Config` (or of\n")
	p("a type it holds), its meaning is that field's doc comment and its default is its value in the\n")
	p("embedded defaults, [`infra/config/defaults.yaml`](../infra/config/defaults.yaml). Do not edit it: change the\n")
	p("doc comments in `infra/config/*.go` or the defaults file and run `%s` (`TestDocsConfigIsUpToDate`\n", Command)
	p("in `internal/configdoc` fails while this file is stale). How the numbers relate, the\n")
	p("invariants I1–I16: [ARCHITECTURE.md](ARCHITECTURE.md#the-numbers-and-their-invariants) and\n")
	p("[drain.md](drain.md#the-invariants).\n\n")
	p("One YAML file (`--config FILE`, default `%s`, which must then exist) over the embedded\n", r.DefaultPath)
	p("defaults holds every number. Decoding is strict: an unknown key (`drian:` → *unknown key \"drian\"\n")
	p("(did you mean \"drain\"?)*), a wrong type, a duration without a unit, a negative duration or a\n")
	p("missing required field is refused with the key, the value and the rule, before anything is done.\n")
	p("Durations take a unit (`250ms`, `5s`, `1m`).\n\n")
	p("A top-level key starting `%s` is an extension and is ignored, as in Kamal's `deploy.yml` and\n", r.Extension)
	p("Compose files: a place for YAML anchors that the sections alias or merge. Inside a section such a\n")
	p("key is unknown like any other.\n\n")
	p("```yaml\n%shost: &host {port_offset: 0, ssh: deploy@10.0.0.1}\nhosts:\n  - {<<: *host, name: web-1}\n  - {<<: *host, name: web-2, ssh: deploy@10.0.0.2}\n```\n\n", r.Extension)
	p("## Environment overrides\n\n")
	p("Any key that is not a list can be overridden from the environment: `%s_` + the key\n", prefix)
	p("path in upper case with `_` for `.` (`%s_DRAIN_WINDOW=20s` sets `drain.window`,\n", prefix)
	p("`%s_WATCHDOG_HEAL_AFTER=6` sets `watchdog.heal_after`); `services`, `hosts`, `balancer.admins`\n", prefix)
	p("and every other list are set in the file only. A `%s_*` variable that names no key is refused\n", prefix)
	p("with a \"did you mean\", unless it is one of these, each read by one command, script or test\n")
	p("(`config.EnvNotConfig`):\n\n")
	p("| variable | read by |\n|---|---|\n")
	for _, e := range r.OtherEnv {
		names := make([]string, len(e.Names))
		for i, n := range e.Names {
			names[i] = "`" + n + "`"
		}
		p("| %s | %s |\n", strings.Join(names, ", "), cell(e.Doc))
	}
	p("\n## Keys\n\n")
	p("One table per top-level key, in the order of `config.Config`. *type*: `duration` takes a unit,\n")
	p("`section` holds the keys below it, `list of sections` holds items whose keys are written\n")
	p("`KEY[].…`. *default*: the value in `infra/config/defaults.yaml`; %s where it sets none (a section,\n", noDefault)
	p("or a key of a list item: the meaning says how a missing value is filled in).\n\n")
	keys := make([]string, 0, len(r.Sections))
	for _, s := range r.Sections {
		keys = append(keys, "[`"+s.Key+"`](#"+anchor(s.Key)+")")
	}
	p("%s\n", strings.Join(keys, " · "))
	for _, s := range r.Sections {
		p("\n### %s\n\n", s.Key)
		if s.Doc != "" && (len(s.Rows) != 1 || s.Rows[0].Key != s.Key) { // a scalar's doc is its row
			p("%s\n\n", s.Doc)
		}
		p("| key | type | default | meaning |\n|---|---|---|---|\n")
		for _, row := range s.Rows {
			p("| `%s` | %s | %s | %s |\n", row.Key, row.Type, cell(row.Default), cell(row.Doc))
		}
	}
	p("\n## Shipped configs\n\n")
	p("[`examples/production.yaml`](../examples/production.yaml) is the source's setup (ALB, 5 s × 2,\n")
	p("drain 15 s, heal after 4); [`examples/local.yaml`](../examples/local.yaml) is the demo's\n")
	p("(in-house LB, three hosts on loopback, fast numbers that keep every invariant);\n")
	p("[`examples/any-service.yaml`](../examples/any-service.yaml) deploys `python3 -m http.server`\n")
	p("(drain at the balancer, start-first); `examples/traffic-apps.yaml`, `traffic-lbs.yaml` and\n")
	p("`traffic-edges.yaml` are the traffic layer's three tiers that `zero502 demo --traffic-layer`\n")
	p("runs ([traffic-layer.md](traffic-layer.md)). Two hosts whose balanced service is on the same\n")
	p("address and port are refused.\n")
	return b.Bytes()
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// anchor is the GitHub anchor of a heading whose text is key.
func anchor(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, key)
}

// Row is the row of key (balancer.interval, services[].health.path), false when no field
// declares it.
func (r *Reference) Row(key string) (Row, bool) {
	for _, s := range r.Sections {
		if i := slices.IndexFunc(s.Rows, func(row Row) bool { return row.Key == key }); i >= 0 {
			return s.Rows[i], true
		}
	}
	return Row{}, false
}
