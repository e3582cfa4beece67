package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// t0 is "now" for the seeded data and for servers built by newTestServer.
var t0 = time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)

const (
	gaugeName = "http.server.active_requests"
	counter   = "http_requests_total"
	histName  = "vllm:time_to_first_token_seconds"
	manyName  = "many.series"
	manyCount = 510
	// seedEvery and seedSpan: one sample a minute for the hour up to t0.
	seedEvery = time.Minute
	seedSpan  = time.Hour
)

var services = []string{"billing", "checkout", "search"}

// openDB returns an empty TSDB in a temp dir. The 24 h block range keeps the head
// appendable across the whole seeded hour.
func openDB(t testing.TB) *tsdb.DB {
	t.Helper()
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	if err != nil {
		t.Fatalf("open tsdb: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// ttftHistogram is the seeded native histogram at minute i: count 10·(i+1), sum
// 2·(i+1), buckets (0.5,1] and (1,2] holding 6·(i+1) and 4·(i+1) (schema 0).
func ttftHistogram(i int) *histogram.Histogram {
	n := uint64(i + 1)
	return &histogram.Histogram{
		Schema:          0,
		Count:           10 * n,
		Sum:             2 * float64(n),
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}},
		PositiveBuckets: []int64{int64(6 * n), -int64(2 * n)}, // delta encoded: 6n, 4n
	}
}

// seed writes CloudWatch-shaped series: a gauge per service, a cumulative counter, a
// native histogram with dotted SageMaker labels and manyCount series of one metric.
func seed(t testing.TB, db storage.Appendable) {
	t.Helper()
	app := db.Appender(context.Background())
	add := func(ls labels.Labels, ts time.Time, v float64) {
		if _, err := app.Append(0, ls, ts.UnixMilli(), v); err != nil {
			t.Fatalf("append %s: %v", ls, err)
		}
	}
	for i, ts := 0, t0.Add(-seedSpan); !ts.After(t0); i, ts = i+1, ts.Add(seedEvery) {
		for j, svc := range services {
			add(labels.FromStrings(labels.MetricName, gaugeName,
				"@resource.service.name", svc, "method", "GET", "@aws.region", "us-east-1", "__type__", "Gauge"), ts, float64(10*(j+1)))
		}
		add(labels.FromStrings(labels.MetricName, counter, "method", "POST",
			"__type__", "Sum", "__temporality__", "cumulative"), ts, float64(60*i))
		hl := labels.FromStrings(labels.MetricName, histName,
			"aws.sagemaker.endpoint.name", "ep-1", "aws.sagemaker.inference_component.name", "ic-a",
			"@resource.host.id", "i-0abc", "@resource.cloud.availability_zone", "us-east-1a",
			"__type__", "ExponentialHistogram", "__temporality__", "cumulative")
		if _, err := app.AppendHistogram(0, hl, ts.UnixMilli(), ttftHistogram(i), nil); err != nil {
			t.Fatalf("append histogram: %v", err)
		}
	}
	for k := range manyCount {
		add(labels.FromStrings(labels.MetricName, manyName, "idx", fmt.Sprintf("%03d", k)), t0, 1)
	}
	if err := app.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// newTestServer serves a seeded TSDB through an emulator configured by cfg, with the
// clock fixed at t0 unless cfg sets one.
func newTestServer(t testing.TB, cfg Config) *httptest.Server {
	t.Helper()
	db := openDB(t)
	seed(t, db)
	return serve(t, cfg, db)
}

func serve(t testing.TB, cfg Config, db storage.Queryable) *httptest.Server {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0 }
	}
	s, err := New(cfg, db)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// unthrottled switches the rate limits off: most tests send more than 10 discovery
// requests a second.
func unthrottled() Limits { return Limits{QueryTPS: -1, DiscoveryTPS: -1} }

// reply is a decoded response.
type reply struct {
	status int
	header http.Header
	env    struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
		Infos     []string        `json:"infos"`
	}
	raw []byte
}

// call sends params as a query string (GET and others) or a form body (POST).
func call(t testing.TB, client *http.Client, base, method, path string, params url.Values) reply {
	t.Helper()
	var body io.Reader
	target := base + path
	if method == http.MethodPost {
		body = strings.NewReader(params.Encode())
	} else if len(params) > 0 {
		target += "?" + params.Encode()
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if r.raw, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if err := json.Unmarshal(r.raw, &r.env); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v\n%s", method, path, err, r.raw)
	}
	return r
}

// v builds url.Values from key, value pairs.
func v(kv ...string) url.Values {
	out := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Add(kv[i], kv[i+1])
	}
	return out
}

// queryResult is the data of a /query or /query_range answer.
type queryResult struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric     map[string]string `json:"metric"`
		Value      json.RawMessage   `json:"value"`
		Values     json.RawMessage   `json:"values"`
		Histogram  json.RawMessage   `json:"histogram"`
		Histograms json.RawMessage   `json:"histograms"`
	} `json:"result"`
}

func decodeQuery(t testing.TB, r reply) queryResult {
	t.Helper()
	var q queryResult
	if err := json.Unmarshal(r.env.Data, &q); err != nil {
		t.Fatalf("data is not a query result: %v\n%s", err, r.raw)
	}
	return q
}

func decodeStrings(t testing.TB, r reply) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal(r.env.Data, &out); err != nil {
		t.Fatalf("data is not a string list: %v\n%s", err, r.raw)
	}
	return out
}
