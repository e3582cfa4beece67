package plugin

import (
	"bytes"
	"context"
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
	answer func(c call) (*fakeResponse, error)
}

// fakeResponse is a 2xx body the fake hands to the caller's decoder.
type fakeResponse struct{ body []byte }

func (f *fakeUpstream) record(c call, decode promclient.Decode) error {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	resp := okJSON(`{"status":"success","data":[]}`)
	if f.answer != nil {
		var err error
		if resp, err = f.answer(c); err != nil {
			return err
		}
	}
	if decode == nil {
		decode = promclient.Data(nil)
	}
	return decode(bytes.NewReader(resp.body))
}

func (f *fakeUpstream) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeUpstream) Query(_ context.Context, expr string, t time.Time, limit int, decode promclient.Decode) error {
	return f.record(call{op: "query", expr: expr, t: t, limit: limit}, decode)
}

func (f *fakeUpstream) QueryRange(_ context.Context, expr string, start, end time.Time, step time.Duration, limit int, decode promclient.Decode) error {
	return f.record(call{op: "query_range", expr: expr, start: start, end: end, step: step, limit: limit}, decode)
}

func (f *fakeUpstream) Labels(_ context.Context, matchers []string, start, end time.Time, limit int, decode promclient.Decode) error {
	return f.record(call{op: "labels", matchers: matchers, start: start, end: end, limit: limit}, decode)
}

func (f *fakeUpstream) LabelValues(_ context.Context, name string, matchers []string, start, end time.Time, limit int, decode promclient.Decode) error {
	return f.record(call{op: "label_values", name: name, matchers: matchers, start: start, end: end, limit: limit}, decode)
}

func (f *fakeUpstream) Series(_ context.Context, matchers []string, start, end time.Time, limit int, decode promclient.Decode) error {
	return f.record(call{op: "series", matchers: matchers, start: start, end: end, limit: limit}, decode)
}

func okJSON(body string) *fakeResponse { return &fakeResponse{body: []byte(body)} }

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
	d, err := New(context.Background(), testSettings(""), func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
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
