// Command filearrows counts the arrows between the files of one Go package: file A points to
// file B when A uses a package-level name or a method declared in B. The architecture page's
// closing table reports it for pkg/plugin; it reads the package's type information the way
// the compiler does (export data from `go list -export`), so it names no identifier wrongly.
//
//	GOWORK=off go run ./scripts/filearrows ./pkg/plugin
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: filearrows <package>")
		os.Exit(2)
	}
	arrows, err := count(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "filearrows:", err)
		os.Exit(1)
	}
	back := 0
	for _, a := range arrows {
		fmt.Printf("%s -> %s\n", a[0], a[1])
		if has(arrows, a[1], a[0]) {
			back++
		}
	}
	fmt.Printf("arrows %d, in both directions %d\n", len(arrows), back/2)
}

func has(arrows [][2]string, from, to string) bool {
	for _, a := range arrows {
		if a[0] == from && a[1] == to {
			return true
		}
	}
	return false
}

// count type-checks pkg's non-test files and returns its file arrows, sorted.
func count(pkg string) ([][2]string, error) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-json", pkg).Output() // #nosec G702 -- a developer tool: pkg is its own command-line argument, passed to go list as one argument, no shell
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", pkg, err)
	}
	exports := map[string]string{}
	var target listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		target = p // -deps lists the named package last
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range target.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(target.Dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	tpkg, err := (&types.Config{Importer: imp}).Check(target.ImportPath, fset, files, info)
	if err != nil {
		return nil, err
	}
	seen := map[[2]string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != tpkg || !obj.Pos().IsValid() {
			continue
		}
		fn, isFunc := obj.(*types.Func)
		method := isFunc && fn.Signature().Recv() != nil
		if obj.Parent() != tpkg.Scope() && !method {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from != to {
			seen[[2]string{from, to}] = true
		}
	}
	arrows := make([][2]string, 0, len(seen))
	for a := range seen {
		arrows = append(arrows, a)
	}
	sort.Slice(arrows, func(i, j int) bool {
		if arrows[i][0] != arrows[j][0] {
			return arrows[i][0] < arrows[j][0]
		}
		return arrows[i][1] < arrows[j][1]
	})
	return arrows, nil
}
