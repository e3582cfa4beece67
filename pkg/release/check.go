// Package release checks a built plugin directory (dist/) the way Grafana's plugin validator
// does for the rules that matter to a first install, and packages it as the zip Grafana
// installs. The validator itself downloads its binary at run time, which an offline CI
// cannot do, so these checks keep the same promises locally.
package release

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/inferscope/sagemaker-datasource/internal/doclinks"
)

// Manifest is the part of plugin.json the checks read.
type Manifest struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	Backend    bool   `json:"backend"`
	Executable string `json:"executable"`
	Info       struct {
		Version  string   `json:"version"`
		Updated  string   `json:"updated"`
		Keywords []string `json:"keywords"`
		Author   struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"author"`
		Links []struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"links"`
		Logos struct {
			Small string `json:"small"`
			Large string `json:"large"`
		} `json:"logos"`
		Screenshots []Screenshot `json:"screenshots"`
	} `json:"info"`
	Includes []struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"includes"`
	Dependencies struct {
		GrafanaDependency string `json:"grafanaDependency"`
	} `json:"dependencies"`
}

// Screenshot is one picture the catalog shows on the plugin's page.
type Screenshot struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Platforms are the OS/arch pairs the plugin SDK's BuildAll produces.
var Platforms = []string{"linux_amd64", "linux_arm64", "linux_arm", "darwin_amd64", "darwin_arm64", "windows_amd64"}

var (
	idPattern      = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*-(datasource|app|panel)$`)
	semverPattern  = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	datePattern    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	accessKeyShape = regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)
)

// Problem is one failed rule, phrased as what is wrong and how to fix it.
type Problem struct {
	Rule, Message string
}

func (p Problem) String() string { return p.Rule + ": " + p.Message }

// Options says how strict a check is.
type Options struct {
	// AllPlatforms requires a backend binary for every entry of Platforms (a release);
	// otherwise one is enough (a local build).
	AllPlatforms bool
}

// Check runs every rule over the plugin directory fsys and returns the problems found.
func Check(fsys fs.FS, opts Options) []Problem {
	var probs []Problem
	add := func(rule, format string, args ...any) {
		probs = append(probs, Problem{rule, fmt.Sprintf(format, args...)})
	}
	raw, err := fs.ReadFile(fsys, "plugin.json")
	if err != nil {
		add("manifest", "plugin.json is missing from the build: run the frontend build (npm run build), which copies it")
		return probs
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		add("manifest", "plugin.json is not valid JSON: %v", err)
		return probs
	}
	if !idPattern.MatchString(m.ID) {
		add("manifest", "id %q must be lower-case words joined by dashes ending in -datasource, -app or -panel", m.ID)
	}
	if m.Type != "datasource" && m.Type != "app" && m.Type != "panel" {
		add("manifest", "type %q must be datasource, app or panel", m.Type)
	}
	if m.Name == "" {
		add("manifest", "name is empty")
	}
	if !semverPattern.MatchString(m.Info.Version) {
		add("manifest", "info.version %q is not a semantic version: the build must replace %%VERSION%% from package.json", m.Info.Version)
	}
	if !datePattern.MatchString(m.Info.Updated) {
		add("manifest", "info.updated %q is not a date: the build must replace %%TODAY%%", m.Info.Updated)
	}
	if m.Info.Author.Name == "" {
		add("manifest", "info.author.name is empty")
	}
	if !strings.HasPrefix(m.Info.Author.URL, "https://") {
		add("manifest", "info.author.url %q must be an https URL: the catalog links the author's name to it", m.Info.Author.URL)
	}
	if len(m.Info.Links) == 0 {
		add("manifest", "info.links is empty: link the documentation, source and issues (https URLs)")
	}
	for _, l := range m.Info.Links {
		if l.Name == "" || !strings.HasPrefix(l.URL, "https://") {
			add("manifest", "info.links entry %q → %q needs a name and an https URL", l.Name, l.URL)
		}
	}
	if len(m.Info.Keywords) == 0 {
		add("manifest", "info.keywords is empty: add a few search words")
	}
	if m.Dependencies.GrafanaDependency == "" {
		add("manifest", "dependencies.grafanaDependency is empty: state the Grafana versions supported")
	}
	for _, logo := range []string{m.Info.Logos.Small, m.Info.Logos.Large} {
		if logo == "" {
			add("logos", "info.logos.small and info.logos.large must both be set")
		} else if !exists(fsys, logo) {
			add("logos", "logo %s is not in the build", logo)
		}
	}
	if m.Info.Logos.Small != "" && path.Clean(m.Info.Logos.Small) == path.Clean(m.Info.Logos.Large) {
		add("logos", "info.logos.small and info.logos.large are both %s: the catalog wants a small and a large file", m.Info.Logos.Small)
	}
	// Grafana's review reads the source map against the source, so it must ship.
	for _, f := range []string{"module.js", "module.js.map", "README.md", "LICENSE", "CHANGELOG.md"} {
		if !exists(fsys, f) {
			add("files", "%s is missing from the build", f)
		}
	}
	for _, p := range CheckScreenshots(fsys, m.Info.Screenshots) {
		add(p.Rule, "%s", p.Message)
	}
	if semverPattern.MatchString(m.Info.Version) {
		checkChangelog(fsys, m.Info.Version, add)
	}
	checkReadme(fsys, add)
	for _, inc := range m.Includes {
		if inc.Type == "dashboard" {
			checkDashboard(fsys, inc.Path, add)
		}
	}
	if m.Backend {
		checkBinaries(fsys, m.Executable, opts, add)
		// The SDK build writes the hashes of the Go sources the binaries came from; the
		// validator compares them with the submitted source.
		if !exists(fsys, "go_plugin_build_manifest") {
			add("backend", "go_plugin_build_manifest is missing: build the backend with the SDK's mage targets")
		}
	}
	checkSecrets(fsys, add)
	return probs
}

// imageSignatures are the first bytes of the image types the catalog shows (the validator
// accepts PNG, JPEG and GIF by content, and SVG).
var imageSignatures = map[string][]byte{
	".png":  []byte("\x89PNG\r\n\x1a\n"),
	".jpg":  {0xff, 0xd8, 0xff},
	".jpeg": {0xff, 0xd8, 0xff},
	".gif":  []byte("GIF8"),
}

// CheckScreenshots wants at least one screenshot, each named, present in fsys (the build, or
// src/ whose img/ the build copies) and an image of the type its name says.
func CheckScreenshots(fsys fs.FS, shots []Screenshot) []Problem {
	var probs []Problem
	add := func(format string, args ...any) {
		probs = append(probs, Problem{"screenshots", fmt.Sprintf(format, args...)})
	}
	if len(shots) == 0 {
		add("info.screenshots is empty: the catalog shows none (scripts/screenshots.sh makes them)")
	}
	for _, s := range shots {
		if s.Name == "" || s.Path == "" {
			add("info.screenshots entry %q → %q needs a name and a path", s.Name, s.Path)
			continue
		}
		sig, ok := imageSignatures[strings.ToLower(path.Ext(s.Path))]
		if !ok {
			add("screenshot %s is not a .png, .jpg or .gif", s.Path)
			continue
		}
		raw, err := fs.ReadFile(fsys, strings.TrimPrefix(s.Path, "./"))
		if err != nil {
			add("screenshot %s is not in the build: put it under src/img/ (scripts/screenshots.sh)", s.Path)
			continue
		}
		if !strings.HasPrefix(string(raw), string(sig)) {
			add("screenshot %s is not a %s image", s.Path, path.Ext(s.Path))
		}
	}
	return probs
}

// checkChangelog wants the changelog's top entry to be the version being shipped, so users
// read what this version brings.
func checkChangelog(fsys fs.FS, version string, add func(rule, format string, args ...any)) {
	raw, err := fs.ReadFile(fsys, "CHANGELOG.md")
	if err != nil {
		return // reported as a missing file
	}
	if top := TopVersion(string(raw)); top != version {
		add("changelog", "the top entry of CHANGELOG.md is %q but the plugin is version %q (package.json): add an entry for %s", top, version, version)
	}
}

// TopVersion is the version of a changelog's first "## " entry ("## 1.2.0", "## [1.2.0] -
// 2026-01-31", "## v1.2.0"), or "" when it has none.
func TopVersion(changelog string) string {
	for _, line := range strings.Split(changelog, "\n") {
		if rest, ok := strings.CutPrefix(line, "## "); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return ""
			}
			return strings.TrimPrefix(strings.Trim(f[0], "[]"), "v")
		}
	}
	return ""
}

// checkReadme wants the README the catalog shows to link absolutely: relative links lead
// nowhere outside the repository.
func checkReadme(fsys fs.FS, add func(rule, format string, args ...any)) {
	raw, err := fs.ReadFile(fsys, "README.md")
	if err != nil {
		return // reported as a missing file
	}
	for _, l := range doclinks.Links(string(raw)) {
		if !doclinks.HasScheme(l.Target) && !strings.HasPrefix(l.Target, "#") {
			add("readme", "README.md:%d links %q: the catalog shows this README outside the repository, so use an https URL", l.Line, l.Target)
		}
	}
}

func checkDashboard(fsys fs.FS, p string, add func(rule, format string, args ...any)) {
	raw, err := fs.ReadFile(fsys, p)
	if err != nil {
		add("includes", "dashboard %s is listed in plugin.json but not in the build", p)
		return
	}
	var d struct {
		UID   string `json:"uid"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		add("includes", "dashboard %s is not valid JSON: %v", p, err)
		return
	}
	if d.UID == "" || d.Title == "" {
		add("includes", "dashboard %s needs a uid and a title so imports stay stable", p)
	}
}

func checkBinaries(fsys fs.FS, exe string, opts Options, add func(rule, format string, args ...any)) {
	if exe == "" {
		add("backend", "backend is true but executable is empty")
		return
	}
	found := 0
	for _, p := range Platforms {
		name := path.Base(exe) + "_" + p
		if strings.HasPrefix(p, "windows") {
			name += ".exe"
		}
		st, err := fs.Stat(fsys, name)
		switch {
		case err == nil:
			found++
			if st.Mode().Perm()&0o111 == 0 && !strings.HasSuffix(name, ".exe") {
				add("backend", "%s is not executable: chmod +x it before packaging", name)
			}
		case opts.AllPlatforms:
			add("backend", "%s is missing: build every platform (go tool mage -v buildAll)", name)
		}
	}
	if found == 0 && !opts.AllPlatforms {
		add("backend", "no backend binary %s_<os>_<arch> in the build: run go tool mage -v build:backend", path.Base(exe))
	}
}

// checkSecrets refuses builds that carry something shaped like an AWS access key id, the
// most likely secret to slip in through a provisioning file or a test fixture.
func checkSecrets(fsys fs.FS, add func(rule, format string, args ...any)) {
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(path.Base(p), "gpx_") {
			return err
		}
		raw, err := fs.ReadFile(fsys, p)
		if err == nil && accessKeyShape.Match(raw) {
			add("secrets", "%s contains something shaped like an AWS access key id: remove it", p)
		}
		return nil
	})
}

func exists(fsys fs.FS, p string) bool {
	_, err := fs.Stat(fsys, strings.TrimPrefix(p, "./"))
	return err == nil
}

// ReadManifest reads plugin.json from a directory on disk.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	raw, err := os.ReadFile(path.Join(dir, "plugin.json"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(raw, &m)
}
