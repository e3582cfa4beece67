package plugin

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// call is one request the fake upstream received.
type call struct {
	op         string // query, query_range, labels, label_values, series
	expr, name string
	matchers   []string
	start, end time.Time
	t          time.Time
	step       time.Duration
	limit      int
}

// fakeUpstream answers from a function and records every call, so tests can assert both
// what was sent and that nothing was sent.
type fakeUpstream struct {
	mu     sync.Mutex
	calls  []call
	answer func(c call) (*promclient.Response, error)
}

func (f *fakeUpstream) record(c call) (*promclient.Response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.answer == nil {
		return okJSON(`{"status":"success","data":[]}`), nil
	}
	return f.answer(c)
}

func (f *fakeUpstream) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeUpstream) Query(_ context.Context, expr string, t time.Time, limit int) (*promclient.Response, error) {
	return f.record(call{op: "query", expr: expr, t: t, limit: limit})
}

func (f *fakeUpstream) QueryRange(_ context.Context, expr string, start, end time.Time, step time.Duration, limit int) (*promclient.Response, error) {
	return f.record(call{op: "query_range", expr: expr, start: start, end: end, step: step, limit: limit})
}

func (f *fakeUpstream) Labels(_ context.Context, matchers []string, start, end time.Time, limit int) (*promclient.Response, error) {
	return f.record(call{op: "labels", matchers: matchers, start: start, end: end, limit: limit})
}

func (f *fakeUpstream) LabelValues(_ context.Context, name string, matchers []string, start, end time.Time, limit int) (*promclient.Response, error) {
	return f.record(call{op: "label_values", name: name, matchers: matchers, start: start, end: end, limit: limit})
}

func (f *fakeUpstream) Series(_ context.Context, matchers []string, start, end time.Time, limit int) (*promclient.Response, error) {
	return f.record(call{op: "series", matchers: matchers, start: start, end: end, limit: limit})
}

func okJSON(body string) *promclient.Response {
	return &promclient.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

// testSettings is a valid keys-auth datasource pointing at a loopback endpoint.
func testSettings(jsonData string) backend.DataSourceInstanceSettings {
	if jsonData == "" {
		jsonData = `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9"}`
	}
	return backend.DataSourceInstanceSettings{
		UID:      "test",
		JSONData: []byte(jsonData),
		DecryptedSecureJSONData: map[string]string{
			"accessKey": "AKIDTESTPLUGIN",
			"secretKey": "plugin-test-secret-key-0123456789",
		},
	}
}

// newTestDatasource builds a datasource over fake.
func newTestDatasource(t *testing.T, fake *fakeUpstream) *Datasource {
	t.Helper()
	d, err := New(context.Background(), testSettings(""), func(context.Context, *models.Settings, awsauth.Endpoint) (Upstream, error) {
		return fake, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.setupErr != nil {
		t.Fatalf("test settings rejected: %v", d.setupErr)
	}
	return d
}
