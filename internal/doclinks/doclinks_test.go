package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository this package lives in, published at repoURL.
const (
	repoRoot = "../.."
	repoURL  = "https://github.com/inferscope/sagemaker-datasource"
)

// docs are the Markdown files whose links must resolve: docs/*.md, every README.md outside
// installed or built trees, and CHANGELOG.md.
func docs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		files[i], _ = filepath.Rel(repoRoot, f)
	}
	files = append(files, "CHANGELOG.md")
	skip := []string{"node_modules", ".cache", "dist", ".git"}
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains(skip, d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "README.md" {
			rel, _ := filepath.Rel(repoRoot, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestRepositoryLinksResolve(t *testing.T) {
	files := docs(t)
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/architecture.md") {
		t.Fatalf("the walk missed the top README or docs/: %v", files)
	}
	broken, err := Check(repoRoot, files, repoURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("broken link %s", b)
	}
}

// TestCheck runs the checker on a small tree with every kind of link.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# Title\n## Set up `it` (fast)\n## Again\n## Again\n<a id=\"custom\"></a>\n")
	write("pkg/x/code.go", "package x\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/a.md) [ok anchor](docs/a.md#set-up-it-fast) [repeat](docs/a.md#again-1) [html](docs/a.md#custom)",
		"![img](pkg/x/code.go) [dir](pkg/x/) [titled](docs/a.md \"A\") [self](#readme-heading)",
		"[web](https://example.com/missing.md) [grafana](/d/uid) [mail](mailto:a@b.c)",
		"[repo](https://example.com/r/blob/main/docs/a.md#again) [repo dir](https://example.com/r/tree/main/pkg/x) [repo gone](https://example.com/r/blob/main/docs/b.md)",
		"`[in code](missing-in-span.md)`",
		"```",
		"[in a fence](missing-in-fence.md)",
		"```",
		"# Readme heading",
		"[gone](docs/gone.md) [bad anchor](docs/a.md#nope) [out](../elsewhere.md)",
		"[ref]: docs/also-gone.md",
	}, "\n"))
	broken, err := Check(root, []string{"README.md"}, "https://example.com/r")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.Target+" "+b.Reason)
	}
	slices.Sort(got)
	want := []string{"../elsewhere.md leads outside the repository", "docs/a.md#nope no heading #nope in docs/a.md", "docs/also-gone.md no such file", "docs/gone.md no such file",
		"https://example.com/r/blob/main/docs/b.md no such file"}
	if !slices.Equal(got, want) {
		t.Fatalf("broken = %q\nwant     %q", got, want)
	}
	for _, b := range broken {
		if b.Target == "docs/gone.md" && b.Line != 10 {
			t.Errorf("%s reported on line %d, want 10", b.Target, b.Line)
		}
	}
}
