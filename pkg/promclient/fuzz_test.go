package promclient

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzParseError: any upstream body maps to an error with a message, and
// only 422/429 can count as throttling.
func FuzzParseError(f *testing.F) {
	f.Add(422, "", `{"status":"error","errorType":"execution","error":"Rate exceeded"}`)
	f.Add(403, "InvalidSignatureException:http://x", `{"__type":"a#b:c","message":"m"}`)
	f.Add(502, "", "<html>\xff\xfe")
	f.Add(429, "#", `{"Message":""}`)
	f.Fuzz(func(t *testing.T, status int, errType, body string) {
		if status < 100 || status > 999 {
			t.Skip()
		}
		h := http.Header{}
		h.Set("x-amzn-ErrorType", errType)
		e := parseError(status, h, []byte(body))
		if e.Message == "" && http.StatusText(status) != "" {
			t.Fatalf("no message for %d %q", status, body)
		}
		if e.Throttled && status != 422 && status != 429 {
			t.Fatalf("status %d marked throttled", status)
		}
		if len(e.Message) > maxMessage+len("…") && !strings.HasPrefix(strings.TrimSpace(body), "{") {
			t.Fatalf("unstructured message not truncated: %d bytes", len(e.Message))
		}
		_ = e.Error()
	})
}

// FuzzEscapeSegment: a label name survives the path as exactly one segment.
func FuzzEscapeSegment(f *testing.F) {
	for _, s := range []string{"@resource.host.id", "a/b", "%40", "ü ?#", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		esc := escapeSegment(name)
		if strings.ContainsAny(esc, "/?#@ ") {
			t.Fatalf("%q escaped to %q, which is not one plain segment", name, esc)
		}
		if got, err := url.PathUnescape(esc); err != nil || got != name {
			t.Fatalf("%q -> %q -> %q (%v)", name, esc, got, err)
		}
	})
}
