package models

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONReadOnce holds that a query's JSON is decoded once: in this package and in the
// plugin, only Decode reads a DataQuery's JSON; the router and every parser take the Model.
func TestJSONReadOnce(t *testing.T) {
	var reads []string
	for _, dir := range []string{".", "../plugin"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if fn, ok := n.(*ast.FuncDecl); ok && fn.Name.Name == "Decode" && fn.Recv == nil && dir == "." {
					return false
				}
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "JSON" {
					reads = append(reads, fset.Position(sel.Pos()).String())
				}
				return true
			})
		}
	}
	if len(reads) > 0 {
		t.Errorf("a query's JSON is read outside Decode at %s: take a *Model instead", strings.Join(reads, ", "))
	}
}
