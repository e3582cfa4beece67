// Package doclinks finds relative links in Markdown files that lead nowhere: a file that
// does not exist, or a #fragment no heading of the target produces.
package doclinks

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Broken is one link that does not resolve.
type Broken struct {
	File   string // the Markdown file, relative to the root
	Line   int
	Target string
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

var (
	inline   = regexp.MustCompile(`!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)[^)]*\)`)
	refDef   = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// Link is a link target and the line (1-based) it is on.
type Link struct {
	Line   int
	Target string
}

// Links are the link targets of a Markdown text outside code, in order.
func Links(text string) []Link {
	var out []Link
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			switch {
			case fence == "":
				fence = t[:3]
			case strings.HasPrefix(t, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inline.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{n, strings.Trim(m[1], "<>")})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, Link{n, strings.Trim(m[1], "<>")})
		}
	}
	return out
}

// Relative reports whether target points into the repository: no scheme, not
// host-absolute (/d/uid is a Grafana path) and not protocol-relative.
func Relative(target string) bool {
	return target != "" && !HasScheme(target) && !strings.HasPrefix(target, "/")
}

// HasScheme reports whether target is an absolute URL (https:, mailto:), one that works
// wherever the text is shown.
func HasScheme(target string) bool { return scheme.MatchString(target) }

// Check reads the Markdown files (paths relative to root) and returns their relative links
// that do not resolve. Links under repoURL's blob/main/ or tree/main/ (files that must use
// absolute links, such as the catalog's README) are checked as paths from root.
func Check(root string, files []string, repoURL string) ([]Broken, error) {
	var broken []Broken
	anchors := map[string]map[string]bool{} // by file, cached
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(string(text)) {
			from, target := f, l.Target
			if p, ok := inRepo(target, repoURL); ok {
				from, target = "README.md", p // a path from the root
			} else if !Relative(target) {
				continue
			}
			if reason := resolve(root, from, target, anchors); reason != "" {
				broken = append(broken, Broken{File: f, Line: l.Line, Target: l.Target, Reason: reason})
			}
		}
	}
	return broken, nil
}

// inRepo is target as a path from the repository root when it is a link to a file of
// repoURL's main branch.
func inRepo(target, repoURL string) (string, bool) {
	if repoURL == "" {
		return "", false
	}
	for _, kind := range []string{"/blob/main/", "/tree/main/"} {
		if p, ok := strings.CutPrefix(target, strings.TrimSuffix(repoURL, "/")+kind); ok && p != "" {
			return p, true
		}
	}
	return "", false
}

// resolve says why target, linked from file, does not resolve, or "".
func resolve(root, file, target string, anchors map[string]map[string]bool) string {
	path, frag, _ := strings.Cut(target, "#")
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	dest := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path)))
	if path == "" {
		dest = file
	}
	if dest == ".." || strings.HasPrefix(dest, "../") {
		return "leads outside the repository"
	}
	info, err := os.Stat(filepath.Join(root, dest))
	if err != nil {
		return "no such file"
	}
	if frag == "" || info.IsDir() || !strings.HasSuffix(strings.ToLower(dest), ".md") {
		return ""
	}
	if anchors[dest] == nil {
		text, err := os.ReadFile(filepath.Join(root, dest))
		if err != nil {
			return err.Error()
		}
		anchors[dest] = Anchors(string(text))
	}
	if !anchors[dest][strings.ToLower(frag)] {
		return "no heading #" + frag + " in " + dest
	}
	return ""
}

var (
	heading   = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// Anchors are the fragments a Markdown text's headings get on GitHub: lower case,
// punctuation dropped, spaces as hyphens, repeats numbered (-1, -2); and explicit
// <a name|id="…"> anchors.
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[strings.ToLower(m[1])] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		title := inline.ReplaceAllStringFunc(m[1], func(l string) string { return l[strings.Index(l, "[")+1 : strings.Index(l, "]")] })
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(title), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
