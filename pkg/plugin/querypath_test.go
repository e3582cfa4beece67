package plugin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueryPathInArchitecture holds docs/architecture.md's picture of a query's path: every
// name it puts in a file (a func, a type, or Type.Method) is declared in that file, so the
// picture cannot drift from the code unnoticed.
func TestQueryPathInArchitecture(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- query-path -->")
	block, _, ok2 := strings.Cut(block, "<!-- /query-path -->")
	if !ok || !ok2 {
		t.Fatal("docs/architecture.md has no <!-- query-path --> block")
	}
	lines := 0
	for _, line := range strings.Split(block, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.HasSuffix(fields[0], ".go") {
			continue
		}
		lines++
		declared := declarations(t, filepath.Join("..", fields[0]))
		for _, name := range strings.Split(strings.Join(fields[1:], " "), "→") {
			if name = strings.TrimSpace(name); !declared[name] {
				t.Errorf("docs/architecture.md: %s is not declared in pkg/%s", name, fields[0])
			}
		}
	}
	if lines < 10 {
		t.Errorf("the query-path block names %d files; it should picture the whole path", lines)
	}
}

// declarations are a file's top-level funcs and types, and its methods as Type.Method.
func declarations(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("docs/architecture.md names %s: %v", path, err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil {
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					name = id.Name + "." + name
				}
			}
			out[name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					out[ts.Name.Name] = true
				}
			}
		}
	}
	return out
}
