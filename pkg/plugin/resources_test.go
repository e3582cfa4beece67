package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

type resourceCall struct {
	method, path, query, body string
	headers                   map[string][]string
}

func callResource(t *testing.T, d *Datasource, rc resourceCall) *backend.CallResourceResponse {
	t.Helper()
	url := "/api/datasources/uid/test/resources/" + rc.path
	if rc.query != "" {
		url += "?" + rc.query
	}
	headers := rc.headers
	if rc.method == http.MethodPost && headers == nil {
		headers = map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}
	}
	var got []*backend.CallResourceResponse
	err := d.CallResource(context.Background(), &backend.CallResourceRequest{
		Path: rc.path, Method: rc.method, URL: url, Headers: headers, Body: []byte(rc.body),
	}, backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		got = append(got, r)
		return nil
	}))
	if err != nil {
		t.Fatalf("CallResource: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d responses, want 1", len(got))
	}
	return got[0]
}

func TestResourcesForwardToCloudWatch(t *testing.T) {
	start, end := time.Unix(1780662000, 0).UTC(), time.Unix(1780665600, 500e6).UTC()
	tests := []struct {
		name string
		rc   resourceCall
		want call
	}{
		{
			name: "labels GET, limit clamped to the discovery maximum",
			rc:   resourceCall{method: "GET", path: "api/v1/labels", query: "start=1780662000&end=1780665600.5&limit=40000"},
			want: call{op: "labels", start: start, end: end, limit: promclient.MaxDiscoveryLimit},
		},
		{
			name: "labels form POST with matchers",
			rc: resourceCall{method: "POST", path: "api/v1/labels",
				body: `match%5B%5D=%7B%22vllm%3Anum_requests_running%22%7D&start=1780662000&end=1780665600.5&limit=100`},
			want: call{op: "labels", matchers: []string{`{"vllm:num_requests_running"}`}, start: start, end: end, limit: 100},
		},
		{
			name: "label values, percent-encoded @ name",
			rc:   resourceCall{method: "GET", path: "api/v1/label/%40resource.host.id/values", query: "limit=5"},
			want: call{op: "label_values", name: "@resource.host.id", limit: 5},
		},
		{
			name: "label values, literal @ name",
			rc:   resourceCall{method: "GET", path: "api/v1/label/@resource.host.id/values"},
			want: call{op: "label_values", name: "@resource.host.id"},
		},
		{
			name: "label values, dotted name",
			rc:   resourceCall{method: "GET", path: "api/v1/label/aws.sagemaker.endpoint.name/values", query: "limit=99999"},
			want: call{op: "label_values", name: "aws.sagemaker.endpoint.name", limit: promclient.MaxDiscoveryLimit},
		},
		{
			name: "label values, Prometheus U__ escaped name",
			rc:   resourceCall{method: "GET", path: "api/v1/label/U___40_resource_2e_host_2e_id/values"},
			want: call{op: "label_values", name: "@resource.host.id"},
		},
		{
			name: "label values of __name__ (the metric list) stay as they are",
			rc:   resourceCall{method: "GET", path: "api/v1/label/__name__/values"},
			want: call{op: "label_values", name: "__name__"},
		},
		{
			name: "label values requested by POST still go upstream (as GET, by promclient)",
			rc:   resourceCall{method: "POST", path: "api/v1/label/job/values", body: "limit=3"},
			want: call{op: "label_values", name: "job", limit: 3},
		},
		{
			name: "series with two selectors",
			rc: resourceCall{method: "GET", path: "api/v1/series",
				query: "match%5B%5D=DCGM_FI_DEV_GPU_UTIL&match%5B%5D=%7B%22vllm%3Anum_requests_running%22%7D&start=2026-06-05T13%3A00%3A00Z&end=1780665600.5"},
			want: call{op: "series", matchers: []string{"DCGM_FI_DEV_GPU_UTIL", `{"vllm:num_requests_running"}`},
				start: time.Date(2026, 6, 5, 13, 0, 0, 0, time.UTC), end: end},
		},
		{
			name: "instant query for query_result(), limit clamped to the query maximum",
			rc:   resourceCall{method: "POST", path: "api/v1/query", body: "query=sum(DCGM_FI_DEV_GPU_UTIL)&time=1780665600.5&limit=2000"},
			want: call{op: "query", expr: "sum(DCGM_FI_DEV_GPU_UTIL)", t: end, limit: promclient.MaxQueryLimit},
		},
		{
			name: "leading slash in the path",
			rc:   resourceCall{method: "GET", path: "/api/v1/labels"},
			want: call{op: "labels"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeUpstream{}
			d := newTestDatasource(t, fake)
			resp := callResource(t, d, tt.rc)
			if resp.Status != http.StatusOK {
				t.Fatalf("status %d, body %s", resp.Status, resp.Body)
			}
			calls := fake.Calls()
			if len(calls) != 1 {
				t.Fatalf("upstream got %d calls, want 1: %+v", len(calls), calls)
			}
			got := calls[0]
			if got.op != tt.want.op || got.name != tt.want.name || got.expr != tt.want.expr || got.limit != tt.want.limit ||
				!slices.Equal(got.matchers, tt.want.matchers) || !got.start.Equal(tt.want.start) || !got.end.Equal(tt.want.end) {
				t.Errorf("upstream call\n got %+v\nwant %+v", got, tt.want)
			}
			if tt.want.op == "query" && !got.t.Equal(tt.want.t) {
				t.Errorf("time %v, want %v", got.t, tt.want.t)
			}
		})
	}
}

func TestResourceQueryPassesUpstreamJSONThrough(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"@resource.host.id":"i-1"},"value":[1780665600,"3"]}]},"warnings":["w"]}`
	fake := &fakeUpstream{answer: func(call) (*fakeResponse, error) { return okJSON(body), nil }}
	d := newTestDatasource(t, fake)
	resp := callResource(t, d, resourceCall{method: "GET", path: "api/v1/query", query: "query=up"})
	if string(resp.Body) != body {
		t.Errorf("body changed on the way through:\n got %s\nwant %s", resp.Body, body)
	}
	if ct := resp.Headers["Content-Type"]; len(ct) != 1 || ct[0] != "application/json" {
		t.Errorf("Content-Type %v", ct)
	}
	if got := fake.Calls()[0].t; time.Since(got) > time.Minute {
		t.Errorf("a query without time should run at now, ran at %v", got)
	}
}

func TestResourcesAnsweredWithoutUpstream(t *testing.T) {
	tests := []struct {
		name       string
		rc         resourceCall
		wantStatus int
		wantBody   string // substring
	}{
		{"metadata is an empty success", resourceCall{method: "GET", path: "api/v1/metadata", query: "limit=10000"}, 200, `{"status":"success","data":{}}`},
		{"rules are an empty success", resourceCall{method: "GET", path: "api/v1/rules"}, 200, `"groups":[]`},
		{"buildinfo is not found", resourceCall{method: "GET", path: "api/v1/status/buildinfo"}, 404, `"errorType":"not_found"`},
		{"exemplars are not found", resourceCall{method: "GET", path: "api/v1/query_exemplars", query: "query=test&start=1&end=2"}, 404, `no /api/v1/query_exemplars endpoint`},
		{"unknown API path", resourceCall{method: "GET", path: "api/v1/format_query"}, 404, `"status":"error"`},
		{"path outside the API", resourceCall{method: "GET", path: "../secrets"}, 404, `"status":"error"`},
		{"label values without a name", resourceCall{method: "GET", path: "api/v1/label//values"}, 404, `"status":"error"`},
		{"method not allowed", resourceCall{method: "DELETE", path: "api/v1/labels"}, 405, `use GET or POST`},
		{"bad limit", resourceCall{method: "GET", path: "api/v1/labels", query: "limit=lots"}, 400, `parameter limit`},
		{"negative limit", resourceCall{method: "GET", path: "api/v1/labels", query: "limit=-1"}, 400, `parameter limit`},
		{"bad start", resourceCall{method: "GET", path: "api/v1/series", query: "match%5B%5D=up&start=yesterday"}, 400, `parameter start`},
		{"query without query", resourceCall{method: "GET", path: "api/v1/query"}, 400, `query parameter is missing`},
		{"JSON body is not a form", resourceCall{method: "POST", path: "api/v1/labels", body: `{"limit":1}`,
			headers: map[string][]string{"Content-Type": {"application/json"}}}, 400, `application/x-www-form-urlencoded`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeUpstream{}
			d := newTestDatasource(t, fake)
			resp := callResource(t, d, tt.rc)
			if resp.Status != tt.wantStatus {
				t.Errorf("status %d, want %d (body %s)", resp.Status, tt.wantStatus, resp.Body)
			}
			if !strings.Contains(string(resp.Body), tt.wantBody) {
				t.Errorf("body %s does not contain %s", resp.Body, tt.wantBody)
			}
			if !json.Valid(resp.Body) {
				t.Errorf("body is not JSON: %s", resp.Body)
			}
			if n := len(fake.Calls()); n != 0 {
				t.Errorf("upstream was called %d times, want none", n)
			}
		})
	}
}

func TestResourceCacheHeaderEcho(t *testing.T) {
	tests := []struct{ sent, want string }{
		{"private, max-age=60", "private, max-age=60"},
		{"max-age=3600", "private, max-age=3600"},
		{"", ""},
		{"no-store", ""},
		{"max-age=abc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.sent, func(t *testing.T) {
			d := newTestDatasource(t, &fakeUpstream{})
			var h map[string][]string
			if tt.sent != "" {
				h = map[string][]string{"X-Grafana-Cache": {tt.sent}}
			}
			resp := callResource(t, d, resourceCall{method: "GET", path: "api/v1/labels", headers: h})
			got := strings.Join(resp.Headers["Cache-Control"], ",")
			if got != tt.want {
				t.Errorf("Cache-Control %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResourceUpstreamErrors(t *testing.T) {
	secret := testSettings("").DecryptedSecureJSONData["secretKey"]
	fake := &fakeUpstream{answer: func(call) (*fakeResponse, error) {
		return nil, &promclient.APIError{Status: 403, Type: "SignatureDoesNotMatch",
			Message: "canonical request had x-amz-security-token:FQoGZXIvYXdzEXAMPLE and key " + secret}
	}}
	d := newTestDatasource(t, fake)
	resp := callResource(t, d, resourceCall{method: "GET", path: "api/v1/labels"})
	if resp.Status != 403 {
		t.Errorf("status %d, want CloudWatch's 403", resp.Status)
	}
	var env struct{ Status, ErrorType, Error string }
	if err := json.Unmarshal(resp.Body, &env); err != nil || env.Status != "error" {
		t.Fatalf("not a Prometheus error envelope: %s", resp.Body)
	}
	if !strings.Contains(env.Error, "SignatureDoesNotMatch") {
		t.Errorf("CloudWatch's error type is lost: %s", env.Error)
	}
	for _, leak := range []string{secret, "FQoGZXIvYXdzEXAMPLE"} {
		if strings.Contains(string(resp.Body), leak) {
			t.Errorf("response leaks %q: %s", leak, resp.Body)
		}
	}
}

func TestResourceMetricNamesNotListed(t *testing.T) {
	notFound := func(call) (*fakeResponse, error) {
		return nil, &promclient.APIError{Status: 404, Type: "not_found", Message: "NOT supported"}
	}
	d := newTestDatasource(t, &fakeUpstream{answer: notFound})
	resp := callResource(t, d, resourceCall{method: "GET", path: "api/v1/label/__name__/values"})
	if resp.Status != 200 || !strings.Contains(string(resp.Body), `"data":[]`) || !strings.Contains(string(resp.Body), "type the metric name") {
		t.Errorf("__name__ values on a 404: status %d body %s, want an empty list with a warning", resp.Status, resp.Body)
	}
	// Any other label keeps CloudWatch's 404.
	resp = callResource(t, d, resourceCall{method: "GET", path: "api/v1/label/job/values"})
	if resp.Status != 404 {
		t.Errorf("job values on a 404: status %d, want 404", resp.Status)
	}
}

func TestResourceSettingsError(t *testing.T) {
	fake := &fakeUpstream{}
	d, err := New(context.Background(), testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://example.com"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := callResource(t, d, resourceCall{method: "GET", path: "api/v1/labels"})
	if resp.Status != 400 || !strings.Contains(string(resp.Body), "jsonData.endpoint") {
		t.Errorf("status %d body %s: want a 400 naming jsonData.endpoint", resp.Status, resp.Body)
	}
	if len(fake.Calls()) != 0 {
		t.Error("upstream called despite bad settings")
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1780665600", time.Unix(1780665600, 0), true},
		{"1780665600.25", time.Unix(1780665600, 250e6), true},
		{"2026-06-05T13:00:00Z", time.Date(2026, 6, 5, 13, 0, 0, 0, time.UTC), true},
		{"2026-06-05T13:00:00.5+02:00", time.Date(2026, 6, 5, 11, 0, 0, 500e6, time.UTC), true},
		{"NaN", time.Time{}, false},
		{"+Inf", time.Time{}, false},
		{"1e300", time.Time{}, false},
		{"tomorrow", time.Time{}, false},
	}
	for _, tt := range tests {
		got, err := parseTime(tt.in)
		if (err == nil) != tt.ok || (tt.ok && !got.Equal(tt.want)) {
			t.Errorf("parseTime(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// A panic while answering a resource call is that call's 500, not the end of the process.
func TestResourcePanicIsAnError(t *testing.T) {
	d := newTestDatasource(t, &fakeUpstream{answer: func(call) (*fakeResponse, error) { panic("boom") }})
	resp := callResource(t, d, resourceCall{method: "GET", path: "api/v1/labels"})
	var env struct{ Status, ErrorType, Error string }
	if err := json.Unmarshal(resp.Body, &env); err != nil || resp.Status != http.StatusInternalServerError || env.ErrorType != "internal" ||
		!strings.Contains(env.Error, "api/v1/labels") {
		t.Fatalf("status %d body %s, want a 500 internal error naming the path", resp.Status, resp.Body)
	}
	// The datasource still answers.
	resp = callResource(t, d, resourceCall{method: "GET", path: "api/v1/metadata"})
	if resp.Status != http.StatusOK {
		t.Fatalf("after a panic: status %d", resp.Status)
	}
}
