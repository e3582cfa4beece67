package promclient

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
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

// FuzzLabelValuesPath: whatever the label name, either the client refuses it without a
// request, or the path it sends stays under /api/v1/label/…/values however many times a
// proxy percent-decodes it (backslashes read as slashes) and resolves dot segments.
func FuzzLabelValuesPath(f *testing.F) {
	for _, s := range []string{"..", ".", "%2e%2e", "%2E.", "%252e%252e", "a/../../x", `..\..`, "job", "@resource.host.id", "...", ".a"} {
		f.Add(s)
	}
	var sent string
	u, _ := url.Parse("http://127.0.0.1:1")
	c, err := New(Options{BaseURL: u, QueryRPS: -1, DiscoveryRPS: -1, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.URL.EscapedPath()
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"status":"success","data":[]}`)), Request: r}, nil
	})})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string) {
		sent = ""
		err := c.LabelValues(context.Background(), name, nil, time.Time{}, time.Time{}, 0, nil)
		if err != nil {
			if sent != "" {
				t.Fatalf("%q refused (%v) but %s was sent", name, err, sent)
			}
			return
		}
		p := sent
		for range maxDecodeRounds + 1 {
			clean := path.Clean(strings.ReplaceAll(p, `\`, "/"))
			if !strings.HasPrefix(clean, "/api/v1/label/") || !strings.HasSuffix(clean, "/values") {
				t.Fatalf("label %q sent as %s, which a proxy can resolve to %s", name, sent, clean)
			}
			next, err := url.PathUnescape(p)
			if err != nil || next == p {
				break
			}
			p = next
		}
	})
}

func TestLabelValuesRefusesDotSegments(t *testing.T) {
	for _, name := range []string{".", "..", "%2e%2e", "%2E", ".%2E", "%252e%252e", "a/../b", `x\..`, "%2F..%2F"} {
		fake := &fakeCW{}
		c, _ := newTestClient(t, fake, nil)
		err := c.LabelValues(context.Background(), name, nil, time.Time{}, time.Time{}, 0, nil)
		if err == nil || !backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "cannot be sent in a URL path") {
			t.Errorf("%q: err %v, want a downstream error about the path segment", name, err)
		}
		if n := len(fake.requests()); n != 0 {
			t.Errorf("%q: %d requests sent", name, n)
		}
	}
	for _, name := range []string{"...", ".a", "a.", "@resource.host.id", "%2e%2e%2e"} {
		fake := &fakeCW{}
		c, _ := newTestClient(t, fake, nil)
		if err := c.LabelValues(context.Background(), name, nil, time.Time{}, time.Time{}, 0, nil); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
}
