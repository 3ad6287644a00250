package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// relationFunc names the functions that hold an invariant's relation: relationI1 … relationI16.
var relationFunc = regexp.MustCompile(`^relation(I[0-9]+)$`)

// boundaryShift is the mutation that moves a relation's boundary by one: strict ↔ non-strict.
var boundaryShift = map[token.Token]token.Token{
	token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.LSS: token.LEQ, token.LEQ: token.LSS,
}

// codeMutants finds every relational operator inside the relation functions of the invariants
// package and makes, for each, two mutated copies of its file in tmp: the boundary shifted
// (> → >=, < → <=, >= → >, <= → <) and the operands swapped (the reversed relation). Each comes
// with an overlay file for go test -overlay; the working tree is never written.
func codeMutants(pkgDir, tmp string) ([]*mutant, error) {
	files, err := filepath.Glob(filepath.Join(pkgDir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []*mutant
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			match := relationFunc.FindStringSubmatch(fn.Name.Name)
			if match == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				be, ok := n.(*ast.BinaryExpr)
				if !ok {
					return true
				}
				shifted, ok := boundaryShift[be.Op]
				if !ok {
					return true
				}
				off := func(p token.Pos) int { return fset.Position(p).Offset }
				x := string(src[off(be.X.Pos()):off(be.X.End())])
				y := string(src[off(be.Y.Pos()):off(be.Y.End())])
				at := fmt.Sprintf("%s:%d", filepath.Base(path), fset.Position(be.OpPos).Line)
				orig := fmt.Sprintf("%s %s %s", x, be.Op, y)
				for _, alt := range []string{
					fmt.Sprintf("%s %s %s", x, shifted, y),
					fmt.Sprintf("%s %s %s", y, be.Op, x),
				} {
					var b strings.Builder
					b.Write(src[:off(be.Pos())])
					b.WriteString(alt)
					b.Write(src[off(be.End()):])
					out = append(out, &mutant{
						invariant: match[1],
						kind:      "code",
						label:     fmt.Sprintf("%s %s: %s → %s", at, fn.Name.Name, orig, alt),
						srcPath:   path,
						mutated:   b.String(),
					})
				}
				return true
			})
		}
	}
	for i, m := range out {
		dir := filepath.Join(tmp, fmt.Sprintf("code-%02d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		file := filepath.Join(dir, filepath.Base(m.srcPath))
		if err := os.WriteFile(file, []byte(m.mutated), 0o644); err != nil {
			return nil, err
		}
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {m.srcPath: file}})
		if err != nil {
			return nil, err
		}
		m.overlayPath = filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(m.overlayPath, overlay, 0o644); err != nil {
			return nil, err
		}
	}
	return out, nil
}
