package awsauth

import (
	"bytes"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// minSecretLen keeps very short values (a stray "1" in secureJsonData) from shredding
// every message they happen to occur in.
const minSecretLen = 4

// maxLearned bounds the secrets the signer reports, which pile up as credentials rotate
// (assumed roles renew hourly); the least recently seen are forgotten first, and patterns
// still catch their shapes. Pinned secrets do not count against it.
const maxLearned = 64

// patterns find secrets whose values are not known. Each keeps its first group (the name
// and separator) and replaces the rest. Separators cover raw header lines ("Name: v"), JSON
// ("Name":"v" or "Name":["v"], also with escaped quotes) and URL encoding (Name=v, Name%3Dv, %22%3A%22).
var patterns = []*regexp.Regexp{
	// Session tokens: header, query parameter or JSON key; values are base64-ish, maybe %-encoded.
	regexp.MustCompile(`(?i)(x-amz-security-token(?:\\?["']|\s|[:=\[]|%2[02]|%3[ad]|%5b){1,8})(?:[A-Za-z0-9+/=%_\-]|\\/|\\u002b){8,}`),
	// Signatures: Authorization's Signature=, and X-Amz-Signature in presigned URLs.
	regexp.MustCompile(`(?i)((?:x-amz-)?signature(?:\\?["']|\s|[:=\[]|%2[02]|%3[ad]|%5b){1,8})[0-9a-f]{64}`),
	// The access key id in Authorization's Credential=<key id>/date/region/service/aws4_request.
	regexp.MustCompile(`(?i)(credential(?:=|%3d))[A-Za-z0-9]{4,}`),
	// AWS access key ids on their own (long-term AKIA, temporary ASIA, and the other prefixes).
	regexp.MustCompile(`()\b(?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|AGPA|ABIA|ACCA)[A-Z0-9]{12,}\b`),
}

// hints are cheap substrings (lower case) without which no pattern can match.
var hints = []string{"security-token", "signature", "credential", "akia", "asia", "aida", "aroa", "aipa", "anpa", "anva", "agpa", "abia", "acca"}

// hintStart marks the first letters of the hints.
var hintStart = func() (t [256]bool) {
	for _, h := range hints {
		t[h[0]] = true
	}
	return t
}()

// Redactor is the one step every string leaving the plugin passes: errors, frame notices
// and metadata, resource bodies, health messages and log fields. It removes the secrets it
// has been told about — the datasource's secureJsonData and every credential the signer
// actually used (keys, default chain, assumed role, session tokens included) — in raw,
// JSON-escaped and URL-encoded form, and recognises AWS access key ids, session tokens and
// signatures by pattern in any quoting. It is safe for concurrent use. The zero value knows no secrets but applies the
// patterns.
type Redactor struct {
	mu       sync.RWMutex
	pinned   map[string]int    // secret → how many holders pinned it; never evicted
	learned  map[string]uint64 // secret → tick it was last reported; capped at maxLearned
	tick     uint64
	forms    []string // every form of every known secret: what Bytes looks for and replacer removes
	replacer *strings.Replacer
}

// NewRedactor returns a redactor that knows secrets for good (pinned).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Pin(secrets...)
	return r
}

// Pin teaches r secrets that stay known however many others are learned, until release
// is called: a datasource's secureJsonData, held for the instance's lifetime. Pins are
// counted, so two holders of one secret each keep it.
func (r *Redactor) Pin(secrets ...string) (release func()) {
	secrets = usable(secrets)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pinned == nil {
		r.pinned = map[string]int{}
	}
	for _, s := range secrets {
		r.pinned[s]++
		delete(r.learned, s)
	}
	r.rebuild()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, s := range secrets {
				if r.pinned[s]--; r.pinned[s] <= 0 {
					delete(r.pinned, s)
				}
			}
			r.rebuild()
		})
	}
}

// Add teaches r secrets the signer used. It calls Add for every request: a secret seen
// again is refreshed, and beyond maxLearned the least recently seen is forgotten.
func (r *Redactor) Add(secrets ...string) {
	secrets = usable(secrets)
	if len(secrets) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.learned == nil {
		r.learned = map[string]uint64{}
	}
	r.tick++
	changed := false
	for _, s := range secrets {
		if r.pinned[s] > 0 {
			continue
		}
		if _, ok := r.learned[s]; !ok {
			changed = true
		}
		r.learned[s] = r.tick
	}
	for len(r.learned) > maxLearned {
		oldest, at := "", uint64(0)
		for s, t := range r.learned {
			if oldest == "" || t < at {
				oldest, at = s, t
			}
		}
		delete(r.learned, oldest)
	}
	if changed {
		r.rebuild()
	}
}

// usable trims secrets and drops those too short to redact.
func usable(secrets []string) []string {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if s = strings.TrimSpace(s); len(s) >= minSecretLen {
			out = append(out, s)
		}
	}
	return out
}

// rebuild lists the forms of every known secret once; r.mu is held.
func (r *Redactor) rebuild() {
	all := make([]string, 0, len(r.pinned)+len(r.learned))
	for s := range r.pinned {
		all = append(all, s)
	}
	for s := range r.learned {
		all = append(all, s)
	}
	// Longest first, so a secret that contains another is replaced whole.
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) || len(all[i]) == len(all[j]) && all[i] < all[j] })
	r.forms = formsOf(all)
	r.replacer = nil
	if len(r.forms) > 0 {
		r.replacer = newReplacer(r.forms)
	}
}

// formsOf lists each secret in the forms it takes when echoed: as is, URL-encoded (query
// and path escaping) and JSON-escaped ("/" as "\/", "+" as "\u002b", or both), once each.
func formsOf(secrets []string) []string {
	jsonEscape := strings.NewReplacer("/", `\/`, "+", `\u002b`)
	seen := map[string]bool{}
	var forms []string
	for _, s := range secrets {
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s), strings.ReplaceAll(s, "/", `\/`), strings.ReplaceAll(s, "+", `\u002b`), jsonEscape.Replace(s)} {
			if !seen[form] {
				seen[form] = true
				forms = append(forms, form)
			}
		}
	}
	return forms
}

func newReplacer(forms []string) *strings.Replacer {
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, secretMark)
	}
	return strings.NewReplacer(pairs...)
}

// String returns s without secrets.
func (r *Redactor) String(s string) string {
	if r != nil {
		r.mu.RLock()
		rep := r.replacer
		r.mu.RUnlock()
		if rep != nil {
			s = rep.Replace(s)
		}
	}
	if !mayMatch(s) {
		return s
	}
	for _, p := range patterns {
		s = p.ReplaceAllString(s, "${1}"+secretMark)
	}
	return s
}

// Bytes is String for response bodies, which can be megabytes: it copies only when
// something has to be removed.
func (r *Redactor) Bytes(b []byte) []byte {
	dirty := mayMatch(string(b)) // the conversion does not escape, so it does not copy
	if !dirty && r != nil {
		r.mu.RLock()
		for _, f := range r.forms {
			if bytes.Contains(b, []byte(f)) {
				dirty = true
				break
			}
		}
		r.mu.RUnlock()
	}
	if !dirty {
		return b
	}
	s := string(b)
	if clean := r.String(s); clean != s {
		return []byte(clean)
	}
	return b
}

// mayMatch is a cheap test that no pattern can match s: one pass over s, looking for the
// hints (case-insensitively) only where a hint's first letter appears.
func mayMatch(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !hintStart[c] {
			continue
		}
		for _, h := range hints {
			if h[0] == c && hasPrefixFold(s[i:], h) {
				return true
			}
		}
	}
	return false
}

// hasPrefixFold reports whether s starts with lower-case ASCII prefix, ignoring case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for j := 0; j < len(prefix); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[j] {
			return false
		}
	}
	return true
}
