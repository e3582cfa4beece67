package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// recorder is a Plugin that records what the host sends it and answers from its fields.
type recorder struct {
	pc        backend.PluginContext
	health    *backend.CheckHealthResult
	queries   []backend.DataQuery
	queryErr  map[string]error
	resource  *backend.CallResourceRequest
	failCalls bool
}

func (r *recorder) CheckHealth(_ context.Context, pc backend.PluginContext) (*backend.CheckHealthResult, error) {
	r.pc = pc
	if r.failCalls {
		return nil, errors.New("connection refused")
	}
	return r.health, nil
}

func (r *recorder) QueryData(_ context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	r.pc = req.PluginContext
	r.queries = append(r.queries, req.Queries...)
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		if err := r.queryErr[q.RefID]; err != nil {
			resp.Responses[q.RefID] = backend.ErrDataResponse(backend.StatusBadRequest, err.Error())
			continue
		}
		resp.Responses[q.RefID] = backend.DataResponse{Frames: data.Frames{data.NewFrame(q.RefID, data.NewField("v", nil, []float64{1}))}}
	}
	return resp, nil
}

func (r *recorder) CallResource(_ context.Context, req *backend.CallResourceRequest) (*backend.CallResourceResponse, error) {
	r.pc, r.resource = req.PluginContext, req
	return &backend.CallResourceResponse{Status: 207, Headers: map[string][]string{"X-Seen": {req.Path}}, Body: []byte(`{"status":"success"}`)}, nil
}

func settings(uid string) *backend.DataSourceInstanceSettings {
	return &backend.DataSourceInstanceSettings{
		ID: 1, UID: uid, Name: "SageMaker", Type: "inferscope-sagemaker-datasource",
		JSONData:                json.RawMessage(`{"authType":"keys","defaultRegion":"us-east-1"}`),
		DecryptedSecureJSONData: map[string]string{"accessKey": "AKIDHOSTTEST", "secretKey": "host-test-secret"},
	}
}

func newHost(t *testing.T, p Plugin) *httptest.Server {
	t.Helper()
	static := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "page") })
	srv := httptest.NewServer(New(p, func(ds *backend.DataSourceInstanceSettings) backend.PluginContext {
		return backend.PluginContext{OrgID: 1, DataSourceInstanceSettings: ds}
	}, static, settings("ds")))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestHealthAnswersAsGrafana(t *testing.T) {
	for _, tc := range []struct {
		name       string
		plugin     *recorder
		wantStatus int
		wantBody   string
	}{
		{"ok", &recorder{health: &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: "Connected"}}, 200, `"status":"OK"`},
		{"error is a 400 with the message", &recorder{health: &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: "bad key"}}, 400, `"message":"bad key"`},
		{"details pass through", &recorder{health: &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: "m", JSONDetails: []byte(`{"hint":"h"}`)}}, 400, `"details":{"hint":"h"}`},
		{"plugin unreachable is a 500", &recorder{failCalls: true}, 500, "plugin health check failed: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newHost(t, tc.plugin)
			status, body, _ := do(t, "GET", srv.URL+"/api/datasources/uid/ds/health", "")
			if status != tc.wantStatus || !strings.Contains(body, tc.wantBody) {
				t.Errorf("got %d %s, want %d with %s", status, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

func TestSettingsNeverShowSecretsAndSaveMerges(t *testing.T) {
	p := &recorder{health: &backend.CheckHealthResult{Status: backend.HealthStatusOk}}
	srv := newHost(t, p)
	url := srv.URL + "/api/datasources/uid/ds"
	_, body, _ := do(t, "GET", url, "")
	if strings.Contains(body, "host-test-secret") || strings.Contains(body, "AKIDHOSTTEST") {
		t.Fatalf("settings leak a secret: %s", body)
	}
	if !strings.Contains(body, `"secureJsonFields":{"accessKey":true,"secretKey":true}`) {
		t.Errorf("secrets not flagged as configured: %s", body)
	}

	// A save with a new secret key and an emptied access key, and no session token.
	status, body, _ := do(t, "PUT", url, `{"jsonData":{"authType":"keys","defaultRegion":"eu-west-1"},"secureJsonData":{"secretKey":"new-secret","accessKey":""}}`)
	if status != 200 {
		t.Fatalf("save: %d %s", status, body)
	}
	do(t, "GET", url+"/health", "")
	ds := p.pc.DataSourceInstanceSettings
	if got := ds.DecryptedSecureJSONData; got["secretKey"] != "new-secret" || len(got) != 1 {
		t.Errorf("secrets after save %v, want only the new secret key", got)
	}
	if !strings.Contains(string(ds.JSONData), "eu-west-1") || ds.Updated.IsZero() {
		t.Errorf("saved settings %s updated %v: want the new jsonData and a new Updated", ds.JSONData, ds.Updated)
	}
	_, body, _ = do(t, "GET", url, "")
	if !strings.Contains(body, `"secureJsonFields":{"secretKey":true}`) {
		t.Errorf("after save: %s", body)
	}

	for _, bad := range []string{`{"jsonData":[1]}`, `{"jsonData":`, `not json`} {
		if status, body, _ := do(t, "PUT", url, bad); status != 400 {
			t.Errorf("PUT %s: %d %s, want 400", bad, status, body)
		}
	}
	if status, _, _ := do(t, "PUT", srv.URL+"/api/datasources/uid/nope", `{}`); status != 404 {
		t.Errorf("unknown uid: %d, want 404", status)
	}
}

func TestResourceCallsReachThePluginAsGrafanaSendsThem(t *testing.T) {
	p := &recorder{}
	srv := newHost(t, p)
	req, _ := http.NewRequest("GET", srv.URL+"/api/datasources/uid/ds/resources/api/v1/label/%40resource.host.id/values?match%5B%5D=up&limit=5", nil)
	req.Header.Set("Cookie", "grafana_session=x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := p.resource
	if resp.StatusCode != 207 || resp.Header.Get("X-Seen") != "api/v1/label/@resource.host.id/values" {
		t.Errorf("status %d, X-Seen %q: the plugin's status and headers must come back", resp.StatusCode, resp.Header.Get("X-Seen"))
	}
	if r.Method != "GET" || !strings.HasSuffix(r.URL, "?match%5B%5D=up&limit=5") || r.Headers["Cookie"] != nil {
		t.Errorf("request %s %s headers %v: want the query string kept and no cookie", r.Method, r.URL, r.Headers)
	}
	if p.pc.DataSourceInstanceSettings.UID != "ds" {
		t.Errorf("plugin context for %q", p.pc.DataSourceInstanceSettings.UID)
	}
}

func TestQueryParsesGrafanasBody(t *testing.T) {
	from, to := time.UnixMilli(1_700_000_000_000), time.UnixMilli(1_700_003_600_000)
	body := `{"from":"1700000000000","to":"1700003600000","queries":[
		{"refId":"A","datasource":{"uid":"ds","type":"t"},"expr":"up","intervalMs":60000,"maxDataPoints":500},
		{"refId":"B","datasource":{"uid":"ds"},"queryType":"diagnosis"}]}`
	p := &recorder{}
	srv := newHost(t, p)
	status, out, _ := do(t, "POST", srv.URL+"/api/ds/query?ds_type=t", body)
	if status != 200 || !strings.Contains(out, `"results":{"A":`) || !strings.Contains(out, `"B":`) {
		t.Fatalf("%d %s", status, out)
	}
	a, b := p.queries[0], p.queries[1]
	if a.RefID != "A" || a.Interval != time.Minute || a.MaxDataPoints != 500 || !a.TimeRange.From.Equal(from) || !a.TimeRange.To.Equal(to) {
		t.Errorf("A: %+v", a)
	}
	if !strings.Contains(string(a.JSON), `"expr":"up"`) {
		t.Errorf("A's JSON %s lost the query model", a.JSON)
	}
	if b.QueryType != "diagnosis" || b.Interval != time.Second || b.MaxDataPoints != 100 {
		t.Errorf("B with Grafana's defaults: %+v", b)
	}

	p.queryErr = map[string]error{"A": errors.New("parse error")}
	status, out, _ = do(t, "POST", srv.URL+"/api/ds/query", body)
	if status != 400 || !strings.Contains(out, "parse error") {
		t.Errorf("a failed query: %d %s, want Grafana's 400 with the error", status, out)
	}

	for name, bad := range map[string]string{
		"from not epoch ms": `{"from":"now-1h","to":"1","queries":[{"refId":"A","datasource":{"uid":"ds"}}]}`,
		"no queries":        `{"from":"1","to":"2","queries":[]}`,
		"no uid":            `{"from":"1","to":"2","queries":[{"refId":"A"}]}`,
		"not json":          `{`,
	} {
		if status, out, _ := do(t, "POST", srv.URL+"/api/ds/query", bad); status != 400 || !strings.Contains(out, "message") {
			t.Errorf("%s: %d %s, want 400 with a message", name, status, out)
		}
	}
	if status, _, _ := do(t, "POST", srv.URL+"/api/ds/query", `{"from":"1","to":"2","queries":[{"refId":"A","datasource":{"uid":"other"}}]}`); status != 404 {
		t.Errorf("unknown data source: %d, want 404", status)
	}
}

func TestOtherPaths(t *testing.T) {
	srv := newHost(t, &recorder{})
	if status, body, _ := do(t, "GET", srv.URL+"/api/dashboards/uid/x", ""); status != 404 || !strings.Contains(body, "not part of the API") {
		t.Errorf("unserved API path: %d %s", status, body)
	}
	if status, body, _ := do(t, "GET", srv.URL+"/?editor=query", ""); status != 200 || body != "page" {
		t.Errorf("page: %d %s", status, body)
	}
}
