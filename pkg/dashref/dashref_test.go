package dashref

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// Every Panel variable declared in this package is in Linkable, so a test that resolves
// Linkable against the generated JSON covers every panel any code can link to.
func TestLinkableIsComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "dashref.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.CompositeLit); ok {
			if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "Panel" {
				declared++
			}
		}
		return true
	})
	// One composite literal per declared variable; Linkable's slice uses the variables.
	seen := map[Panel]bool{}
	for _, p := range Linkable() {
		if seen[p] {
			t.Errorf("panel %+v listed twice, or two names share it", p)
		}
		seen[p] = true
	}
	if declared != len(seen) {
		t.Fatalf("%d Panel values declared, %d in Linkable: add the new panel to Linkable", declared, len(seen))
	}
}
