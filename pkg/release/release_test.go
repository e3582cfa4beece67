package release

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const goodManifest = `{
  "id": "inferscope-sagemaker-datasource", "type": "datasource", "name": "Inferscope",
  "backend": true, "executable": "gpx_inferscope_sagemaker",
  "info": {"version": "0.1.0", "updated": "2026-11-30", "keywords": ["sagemaker"],
           "author": {"name": "Inferscope"}, "logos": {"small": "img/logo.svg", "large": "img/logo.svg"}},
  "includes": [{"type": "dashboard", "name": "Performance", "path": "dashboards/performance.json"}],
  "dependencies": {"grafanaDependency": ">=11.6.0"}
}`

func goodDist() fstest.MapFS {
	return fstest.MapFS{
		"plugin.json":                          {Data: []byte(goodManifest)},
		"module.js":                            {Data: []byte("define([],function(){})")},
		"module.js.map":                        {Data: []byte(`{"version":3}`)},
		"go_plugin_build_manifest":             {Data: []byte("abc:pkg/main.go\n")},
		"README.md":                            {Data: []byte("# x")},
		"LICENSE":                              {Data: []byte("Apache")},
		"CHANGELOG.md":                         {Data: []byte("# 0.1.0")},
		"img/logo.svg":                         {Data: []byte("<svg/>")},
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
		{name: "missing logo", edit: func(m fstest.MapFS) { delete(m, "img/logo.svg") }, wantRule: []string{"logos", "logos"}},
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
