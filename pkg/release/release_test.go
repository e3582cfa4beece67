package release

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

const goodManifest = `{
  "id": "inferscope-sagemaker-datasource", "type": "datasource", "name": "Inferscope",
  "backend": true, "executable": "gpx_inferscope_sagemaker",
  "info": {"version": "0.1.0", "updated": "2026-11-30", "keywords": ["sagemaker"],
           "author": {"name": "Inferscope", "url": "https://example.com/inferscope"},
           "links": [{"name": "Source", "url": "https://example.com/inferscope/source"}],
           "logos": {"small": "img/logo.svg", "large": "img/logo-large.svg"},
           "screenshots": [{"name": "Performance", "path": "img/screenshots/performance.png"}]},
  "includes": [{"type": "dashboard", "name": "Performance", "path": "dashboards/performance.json"}],
  "dependencies": {"grafanaDependency": ">=11.6.0"}
}`

func goodDist() fstest.MapFS {
	return fstest.MapFS{
		"plugin.json":                          {Data: []byte(goodManifest)},
		"module.js":                            {Data: []byte("define([],function(){})")},
		"module.js.map":                        {Data: []byte(`{"version":3}`)},
		"go_plugin_build_manifest":             {Data: []byte("abc:pkg/main.go\n")},
		"README.md":                            {Data: []byte("# x\n[docs](https://example.com/docs) [top](#x) `[code](docs/a.md)`")},
		"LICENSE":                              {Data: []byte("Apache")},
		"CHANGELOG.md":                         {Data: []byte("# Changelog\n\n## 0.1.0\n\n- First.\n\n## 0.0.1\n")},
		"img/logo.svg":                         {Data: []byte("<svg/>")},
		"img/logo-large.svg":                   {Data: []byte("<svg/>")},
		"img/screenshots/performance.png":      {Data: []byte("\x89PNG\r\n\x1a\n...")},
		"dashboards/performance.json":          {Data: []byte(`{"uid":"inferscope-performance","title":"Performance"}`)},
		"gpx_inferscope_sagemaker_linux_amd64": {Data: []byte("ELF"), Mode: 0o755},
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(fstest.MapFS)
		opts     Options
		wantRule []string // empty: no problems
	}{
		{name: "a good local build passes", edit: func(fstest.MapFS) {}},
		{name: "a release needs every platform", edit: func(fstest.MapFS) {}, opts: Options{AllPlatforms: true},
			wantRule: []string{"backend", "backend", "backend", "backend", "backend"}},
		{name: "no plugin.json", edit: func(m fstest.MapFS) { delete(m, "plugin.json") }, wantRule: []string{"manifest"}},
		{name: "unreplaced version", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, `"0.1.0"`, `"%VERSION%"`, 1))}
		}, wantRule: []string{"manifest"}},
		{name: "bad id", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, "inferscope-sagemaker-datasource", "Inferscope_DS", 1))}
		}, wantRule: []string{"manifest"}},
		{name: "missing module.js", edit: func(m fstest.MapFS) { delete(m, "module.js") }, wantRule: []string{"files"}},
		{name: "missing source map", edit: func(m fstest.MapFS) { delete(m, "module.js.map") }, wantRule: []string{"files"}},
		{name: "missing Go build manifest", edit: func(m fstest.MapFS) { delete(m, "go_plugin_build_manifest") }, wantRule: []string{"backend"}},
		{name: "missing logo", edit: func(m fstest.MapFS) { delete(m, "img/logo.svg") }, wantRule: []string{"logos"}},
		{name: "one file for both logos", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, "img/logo-large.svg", "./img/logo.svg", 1))}
		}, wantRule: []string{"logos"}},
		{name: "no author url", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, `"url": "https://example.com/inferscope"`, `"url": ""`, 1))}
		}, wantRule: []string{"manifest"}},
		{name: "no links", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, `[{"name": "Source", "url": "https://example.com/inferscope/source"}]`, `[]`, 1))}
		}, wantRule: []string{"manifest"}},
		{name: "a relative link in plugin.json", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, "https://example.com/inferscope/source", "docs/", 1))}
		}, wantRule: []string{"manifest"}},
		{name: "changelog behind the version", edit: func(m fstest.MapFS) {
			m["CHANGELOG.md"] = &fstest.MapFile{Data: []byte("# Changelog\n\n## 0.0.1\n")}
		}, wantRule: []string{"changelog"}},
		{name: "relative links in the README", edit: func(m fstest.MapFS) {
			m["README.md"] = &fstest.MapFile{Data: []byte("# x\nSee [docs](docs/configure.md) and ![shot](/img/a.png).\n")}
		}, wantRule: []string{"readme", "readme"}},
		{name: "no screenshots", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, `[{"name": "Performance", "path": "img/screenshots/performance.png"}]`, `[]`, 1))}
		}, wantRule: []string{"screenshots"}},
		{name: "listed screenshot missing", edit: func(m fstest.MapFS) { delete(m, "img/screenshots/performance.png") }, wantRule: []string{"screenshots"}},
		{name: "screenshot that is not a PNG", edit: func(m fstest.MapFS) {
			m["img/screenshots/performance.png"] = &fstest.MapFile{Data: []byte("<html>")}
		}, wantRule: []string{"screenshots"}},
		{name: "screenshot without a name", edit: func(m fstest.MapFS) {
			m["plugin.json"] = &fstest.MapFile{Data: []byte(strings.Replace(goodManifest, `"name": "Performance", "path"`, `"name": "", "path"`, 1))}
		}, wantRule: []string{"screenshots"}},
		{name: "listed dashboard missing", edit: func(m fstest.MapFS) { delete(m, "dashboards/performance.json") }, wantRule: []string{"includes"}},
		{name: "dashboard without uid", edit: func(m fstest.MapFS) {
			m["dashboards/performance.json"] = &fstest.MapFile{Data: []byte(`{"title":"P"}`)}
		}, wantRule: []string{"includes"}},
		{name: "no backend binary", edit: func(m fstest.MapFS) { delete(m, "gpx_inferscope_sagemaker_linux_amd64") }, wantRule: []string{"backend"}},
		{name: "binary not executable", edit: func(m fstest.MapFS) {
			m["gpx_inferscope_sagemaker_linux_amd64"] = &fstest.MapFile{Data: []byte("ELF"), Mode: 0o644}
		}, wantRule: []string{"backend"}},
		{name: "access key in a bundled file", edit: func(m fstest.MapFS) {
			m["provisioning.yaml"] = &fstest.MapFile{Data: []byte("accessKey: AKIAABCDEFGHIJKLMNOP")}
		}, wantRule: []string{"secrets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := goodDist()
			tt.edit(fsys)
			probs := Check(fsys, tt.opts)
			var rules []string
			for _, p := range probs {
				rules = append(rules, p.Rule)
			}
			if strings.Join(rules, ",") != strings.Join(tt.wantRule, ",") {
				t.Errorf("rules = %v, want %v; problems: %v", rules, tt.wantRule, probs)
			}
		})
	}
}

func TestPackage(t *testing.T) {
	dist := t.TempDir()
	for name, f := range goodDist() {
		p := filepath.Join(dist, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, f.Data, mode); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	a, err := Package(dist, out)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a.Zip) != "inferscope-sagemaker-datasource-0.1.0.zip" {
		t.Errorf("zip name %s", a.Zip)
	}
	zr, err := zip.OpenReader(a.Zip)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	seen := map[string]os.FileMode{}
	for _, f := range zr.File {
		seen[f.Name] = f.Mode().Perm()
	}
	if len(seen) != len(goodDist()) {
		t.Errorf("zip has %d files, want %d: %v", len(seen), len(goodDist()), seen)
	}
	if seen["inferscope-sagemaker-datasource/gpx_inferscope_sagemaker_linux_amd64"]&0o111 == 0 {
		t.Errorf("backend binary lost its exec bit in the zip: %v", seen)
	}
	if _, ok := seen["inferscope-sagemaker-datasource/plugin.json"]; !ok {
		t.Errorf("plugin.json not under the plugin id folder: %v", seen)
	}
	raw, err := os.ReadFile(a.Zip)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	line, err := os.ReadFile(a.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(line), hex.EncodeToString(sum[:])+"  ") {
		t.Errorf("sha256 file %q does not match the zip", line)
	}
	// Same files, same bytes: a rebuild must not change the checksum.
	b, err := Package(dist, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(b.SHA256)
	if string(again) != string(line) {
		t.Errorf("packaging is not reproducible: %q vs %q", again, line)
	}
}

func TestTopVersion(t *testing.T) {
	for text, want := range map[string]string{
		"# Changelog\n\n## 0.2.0\n\n## 0.1.0\n": "0.2.0",
		"## [1.4.0] - 2026-01-31\n":             "1.4.0",
		"## v2.0.0-beta.1 (unreleased)\n":       "2.0.0-beta.1",
		"# Changelog\n\nnothing yet\n":          "",
	} {
		if got := TopVersion(text); got != want {
			t.Errorf("TopVersion(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestChangelogIsAtThePackageVersion: the build stamps package.json's version into
// plugin.json and the zip's name, so the changelog's top entry must be that version.
func TestChangelogIsAtThePackageVersion(t *testing.T) {
	raw, err := os.ReadFile("../../package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if top := TopVersion(string(changelog)); top != pkg.Version {
		t.Fatalf("CHANGELOG.md's top entry is %q but package.json's version is %q: add an entry for %s (or bump the version)", top, pkg.Version, pkg.Version)
	}
}

// TestNodeVersionsAgree: the Node CI runs (.nvmrc) satisfies package.json's engines, and the
// README names both.
func TestNodeVersionsAgree(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		raw, err := os.ReadFile("../../" + p)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	nvmrc := strings.TrimSpace(read(".nvmrc"))
	var pkg struct{ Engines struct{ Node string } }
	if err := json.Unmarshal([]byte(read("package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	min, ok := strings.CutPrefix(pkg.Engines.Node, ">=")
	if !ok {
		t.Fatalf("engines.node %q: want >=MAJOR", pkg.Engines.Node)
	}
	have, err1 := strconv.Atoi(nvmrc)
	want, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || have < want {
		t.Fatalf(".nvmrc %q does not satisfy engines.node %q", nvmrc, pkg.Engines.Node)
	}
	readme := read("README.md")
	if !strings.Contains(readme, "Node.js "+nvmrc) || !strings.Contains(readme, min+" works") {
		t.Errorf("README.md must name Node.js %s (.nvmrc) and that %s (engines) works", nvmrc, min)
	}
}

// TestScreenshotsInSource: every screenshot plugin.json lists is a real image under src/ (the
// build copies src/img/ into dist/, where Check looks again), every file under
// src/img/screenshots/ is listed, and together they stay small enough for the zip.
func TestScreenshotsInSource(t *testing.T) {
	m, err := ReadManifest("../..")
	if err != nil {
		t.Fatal(err)
	}
	src := os.DirFS("../../src")
	for _, p := range CheckScreenshots(src, m.Info.Screenshots) {
		t.Error(p)
	}
	listed := map[string]bool{}
	for _, s := range m.Info.Screenshots {
		listed[strings.TrimPrefix(s.Path, "./")] = true
	}
	files, err := fs.Glob(src, "img/screenshots/*")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, f := range files {
		if !listed[f] {
			t.Errorf("src/%s is not listed in plugin.json info.screenshots: list it or leave it out of scripts/screenshots.sh", f)
		}
		st, err := fs.Stat(src, f)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	const budget = 4 << 20
	if total > budget {
		t.Errorf("the screenshots take %d bytes, over %d: fewer or smaller ones keep the plugin's zip small", total, budget)
	}
}
