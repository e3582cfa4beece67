package fanout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// notBatches are the go statements that are not a batch of work, each with its reason.
var notBatches = map[string]string{
	"../sharedstore/storetest": "waits for a test's redis-server process to exit; a test helper, never linked into the plugin",
}

// TestGoStatements holds the package's reason to be: outside it (and tests), pkg/ starts no
// goroutine with a go statement, so every batch is bounded and panic-safe the same way.
func TestGoStatements(t *testing.T) {
	var sites []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "../fanout" || notBatches[filepath.Dir(path)] != "" {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				sites = append(sites, fset.Position(g.Pos()).String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sites) > 0 {
		t.Errorf("go statements outside pkg/fanout: %s; use fanout.Each (or give the site its reason here)", strings.Join(sites, ", "))
	}
}
