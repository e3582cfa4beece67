package plugin

import (
	"bytes"
	"regexp"
	"strings"
)

// sessionTokenInText matches a session token that AWS echoes back inside a
// SignatureDoesNotMatch message (the canonical request lists signed header values), or one
// that shows up in a URL. Such tokens may come from the default chain or an assumed role, so
// they are not among the datasource's own secrets and need a pattern.
var sessionTokenInText = regexp.MustCompile(`(?i)(x-amz-security-token\s*[:=]\s*)[^\s'"&,;]+`)

const redactedMark = "[redacted]"

// redactor removes the datasource's secrets from any text that leaves the plugin: error
// messages, health messages, resource bodies. Upstream messages are not trusted to be clean.
type redactor struct {
	values  []string
	secrets *strings.Replacer // nil when the datasource holds no secrets
}

// minSecretLen keeps very short values (a stray "1" in secureJsonData) from shredding
// every message they happen to occur in.
const minSecretLen = 4

func newRedactor(secureJSONData map[string]string) redactor {
	var r redactor
	var pairs []string
	for _, v := range secureJSONData {
		v = strings.TrimSpace(v)
		if len(v) >= minSecretLen {
			r.values = append(r.values, v)
			pairs = append(pairs, v, redactedMark)
		}
	}
	if len(pairs) > 0 {
		r.secrets = strings.NewReplacer(pairs...)
	}
	return r
}

// String returns s with secrets replaced by [redacted].
func (r redactor) String(s string) string {
	if r.secrets != nil {
		s = r.secrets.Replace(s)
	}
	if strings.Contains(strings.ToLower(s), "x-amz-security-token") {
		s = sessionTokenInText.ReplaceAllString(s, "${1}"+redactedMark)
	}
	return s
}

// Bytes is String for response bodies, which can be megabytes: it scans without copying
// and copies only when something has to be removed.
func (r redactor) Bytes(b []byte) []byte {
	// "ecurity-" catches every capitalisation AWS and HTTP use for the header name; the
	// regexp then decides.
	dirty := (bytes.Contains(b, []byte("ecurity-")) || bytes.Contains(b, []byte("ECURITY-"))) && sessionTokenInText.Match(b)
	for _, v := range r.values {
		dirty = dirty || bytes.Contains(b, []byte(v))
	}
	if !dirty {
		return b
	}
	return []byte(r.String(string(b)))
}
