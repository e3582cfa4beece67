package plugin

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The panel's time range in every query test: one hour, 07 seconds past the minute so
// alignment has something to do.
var (
	from = time.Date(2026, 6, 5, 12, 0, 7, 0, time.UTC)
	to   = from.Add(time.Hour)
)

func dataQuery(refID, model string) backend.DataQuery {
	return backend.DataQuery{
		RefID:         refID,
		JSON:          json.RawMessage(model),
		TimeRange:     backend.TimeRange{From: from, To: to},
		Interval:      time.Minute,
		MaxDataPoints: 600,
	}
}

const (
	matrixBody = `{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"__name__":"vllm:num_requests_running","aws.sagemaker.endpoint.name":"chat","@resource.host.id":"i-0a"},"values":[[1780660800,"3"],[1780660860,"4"]]},
		{"metric":{"__name__":"vllm:num_requests_running","aws.sagemaker.endpoint.name":"chat","@resource.host.id":"i-0b"},"values":[[1780660800,"1"],[1780660860,"NaN"]]}]}}`
	vectorBody = `{"status":"success","data":{"resultType":"vector","result":[
		{"metric":{"aws.sagemaker.endpoint.name":"chat"},"value":[1780664407,"7"]}]}}`
	truncatedBody = `{"status":"success","warnings":["result truncated to the maximum of 500 series; refine the query or use the limit parameter"],
		"data":{"resultType":"vector","result":[
		{"metric":{"@resource.host.id":"i-0a"},"value":[1780664407,"1"]},
		{"metric":{"@resource.host.id":"i-0b"},"value":[1780664407,"2"]}]}}`
)

// answerByOp answers query and query_range calls with fixed bodies.
func answerByOp(bodies map[string]string) func(call) (*fakeResponse, error) {
	return func(c call) (*fakeResponse, error) {
		b, ok := bodies[c.op]
		if !ok {
			return nil, fmt.Errorf("unexpected %s call", c.op)
		}
		return okJSON(b), nil
	}
}

func TestQueryGolden(t *testing.T) {
	legend := `"legendFormat":"{{aws.sagemaker.endpoint.name}} {{@resource.host.id}}"`
	tests := []struct {
		name   string
		model  string
		answer func(call) (*fakeResponse, error)
	}{
		{"range", `{"expr":"vllm:num_requests_running",` + legend + `,"range":true}`, answerByOp(map[string]string{"query_range": matrixBody})},
		{"instant", `{"expr":"sum by (\"aws.sagemaker.endpoint.name\") (vllm:num_requests_running)","legendFormat":"{{aws.sagemaker.endpoint.name}}","instant":true}`,
			answerByOp(map[string]string{"query": vectorBody})},
		{"both", `{"expr":"vllm:num_requests_running",` + legend + `,"range":true,"instant":true}`,
			answerByOp(map[string]string{"query_range": matrixBody, "query": vectorBody})},
		{"error", `{"expr":"sum(","range":true}`, func(call) (*fakeResponse, error) {
			return nil, &promclient.APIError{Status: 400, Type: "bad_data", Message: `1:5: parse error: unclosed left parenthesis`}
		}},
		{"truncated", `{"expr":"DCGM_FI_DEV_GPU_UTIL","instant":true}`, answerByOp(map[string]string{"query": truncatedBody})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestDatasource(t, &fakeUpstream{answer: tt.answer})
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{dataQuery("A", tt.model)}})
			if err != nil {
				t.Fatal(err)
			}
			dr, ok := resp.Responses["A"]
			if !ok {
				t.Fatal("no response for refId A")
			}
			goldentest.CheckDataResponse(t, "testdata", "query-"+tt.name, &dr, *update)
		})
	}
}

func TestQuerySendsWhatGrafanaWould(t *testing.T) {
	tests := []struct {
		name  string
		model string
		dq    func(*backend.DataQuery)
		want  []call // the calls, in op order (query before query_range)
	}{
		{
			name:  "range: step from the panel interval, range aligned to it",
			model: `{"expr":"up"}`,
			want:  []call{{op: "query_range", expr: "up", start: from.Truncate(time.Minute), end: to.Truncate(time.Minute), step: time.Minute}},
		},
		{
			name:  "min step of the query wins over the panel interval",
			model: `{"expr":"up","interval":"5m","range":true}`,
			want:  []call{{op: "query_range", expr: "up", start: time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC), end: time.Date(2026, 6, 5, 13, 0, 0, 0, time.UTC), step: 5 * time.Minute}},
		},
		{
			name:  "intervalFactor multiplies the step",
			model: `{"expr":"up","intervalFactor":2,"range":true}`,
			want:  []call{{op: "query_range", expr: "up", start: from.Truncate(2 * time.Minute), end: to.Truncate(2 * time.Minute), step: 2 * time.Minute}},
		},
		{
			name:  "daily step aligns to the panel's local midnight",
			model: `{"expr":"up","interval":"1d","utcOffsetSec":7200,"range":true}`,
			want: []call{{op: "query_range", expr: "up", step: 24 * time.Hour,
				start: time.Date(2026, 6, 4, 22, 0, 0, 0, time.UTC), end: time.Date(2026, 6, 4, 22, 0, 0, 0, time.UTC)}},
		},
		{
			name:  "variables are interpolated",
			model: `{"expr":"rate({\"vllm:prompt_tokens_total\"}[$__rate_interval]) * $__interval_ms / ${__range_s} + $__range","range":true}`,
			// A new data source's min step is CloudWatch's minute: the rate window is 4 × 1m.
			want: []call{{op: "query_range", expr: `rate({"vllm:prompt_tokens_total"}[4m]) * 60000 / 3600 + 3600s`,
				start: from.Truncate(time.Minute), end: to.Truncate(time.Minute), step: time.Minute}},
		},
		{
			// Grafana without the frontend's min interval sends 20 s at 6 h; one-minute data
			// needs a rate window of several samples, never 1m.
			name:  "default min step keeps $__rate_interval at four one-minute samples",
			model: `{"expr":"rate(x[$__rate_interval])","range":true}`,
			dq:    func(q *backend.DataQuery) { q.Interval = 20 * time.Second },
			want: []call{{op: "query_range", expr: `rate(x[4m])`,
				start: from.Truncate(20 * time.Second), end: to.Truncate(20 * time.Second), step: 20 * time.Second}},
		},
		{
			name:  "instant runs at the end of the range, unaligned",
			model: `{"expr":"up","instant":true}`,
			want:  []call{{op: "query", expr: "up", t: to}},
		},
		{
			name:  "both runs both",
			model: `{"expr":"up","instant":true,"range":true}`,
			want: []call{{op: "query", expr: "up", t: to},
				{op: "query_range", expr: "up", start: from.Truncate(time.Minute), end: to.Truncate(time.Minute), step: time.Minute}},
		},
		{
			name:  "a query saved by a Prometheus datasource (queryType prometheus fields) runs as PromQL",
			model: `{"expr":"up","editorMode":"code","format":"time_series","exemplar":true,"range":true,"datasource":{"type":"prometheus","uid":"x"}}`,
			want:  []call{{op: "query_range", expr: "up", start: from.Truncate(time.Minute), end: to.Truncate(time.Minute), step: time.Minute}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeUpstream{answer: answerByOp(map[string]string{"query_range": matrixBody, "query": vectorBody})}
			d := newTestDatasource(t, fake)
			q := dataQuery("A", tt.model)
			if tt.dq != nil {
				tt.dq(&q)
			}
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil {
				t.Fatal(err)
			}
			if e := resp.Responses["A"].Error; e != nil {
				t.Fatalf("query failed: %v", e)
			}
			calls := fake.Calls()
			if len(calls) == 2 && calls[0].op == "query_range" {
				calls[0], calls[1] = calls[1], calls[0]
			}
			if len(calls) != len(tt.want) {
				t.Fatalf("got calls %+v, want %+v", calls, tt.want)
			}
			for i, w := range tt.want {
				g := calls[i]
				if g.op != w.op || g.expr != w.expr || g.step != w.step || !g.start.Equal(w.start) || !g.end.Equal(w.end) || !g.t.Equal(w.t) {
					t.Errorf("call %d\n got %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
}

func TestQueryErrors(t *testing.T) {
	tests := []struct {
		name       string
		model      string
		answer     func(call) (*fakeResponse, error)
		wantStatus backend.Status
		wantSource backend.ErrorSource
		want       string
		wantCalls  int
	}{
		{"model is not JSON", `{"expr":`, nil, backend.StatusBadRequest, backend.ErrorSourceDownstream, "not a JSON object", 0},
		{"empty expression", `{"expr":"  "}`, nil, backend.StatusBadRequest, backend.ErrorSourceDownstream, "expr is empty", 0},
		{"bad min step", `{"expr":"up","interval":"soon"}`, nil, backend.StatusBadRequest, backend.ErrorSourceDownstream, "invalid duration", 0},
		{"CloudWatch throttles", `{"expr":"up"}`, func(call) (*fakeResponse, error) {
			return nil, &promclient.APIError{Status: 422, Type: "execution", Message: "Rate exceeded", Throttled: true, Attempts: 4}
		}, 422, backend.ErrorSourceDownstream, "Rate exceeded", 1},
		{"CloudWatch range limit", `{"expr":"up"}`, func(call) (*fakeResponse, error) {
			return nil, &promclient.APIError{Status: 422, Type: "execution", Message: "query time range exceeds the maximum of 7 days"}
		}, 422, backend.ErrorSourceDownstream, "7 days", 1},
		{"timeout", `{"expr":"up"}`, func(call) (*fakeResponse, error) {
			return nil, fmt.Errorf("waiting: %w", context.DeadlineExceeded)
		}, backend.StatusTimeout, backend.ErrorSourceDownstream, "did not answer in time", 1},
		{"our own limiter refuses", `{"expr":"up"}`, func(call) (*fakeResponse, error) {
			return nil, &promclient.LimitError{RequestsPerSecond: 20, MaxConcurrency: 10, Waited: time.Second}
		}, backend.StatusTooManyRequests, backend.ErrorSourceDownstream, "raise requestsPerSecond or maxConcurrency in the datasource settings", 1},
		{"2xx body that is not Prometheus JSON", `{"expr":"up"}`, func(call) (*fakeResponse, error) {
			return okJSON(`<html>login</html>`), nil
		}, backend.StatusBadGateway, backend.ErrorSourceDownstream, "Prometheus API response", 1},
		{"plugin bug", `{"expr":"up"}`, func(call) (*fakeResponse, error) {
			return nil, fmt.Errorf("something internal broke")
		}, backend.StatusInternal, backend.ErrorSourcePlugin, "something internal broke", 1},
		{"panic", `{"expr":"up"}`, func(call) (*fakeResponse, error) {
			panic("boom")
		}, backend.StatusInternal, backend.ErrorSourcePlugin, "internal error while running query A", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeUpstream{answer: tt.answer}
			d := newTestDatasource(t, fake)
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{dataQuery("A", tt.model)}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error == nil {
				t.Fatal("no error")
			}
			if dr.Status != tt.wantStatus || dr.ErrorSource != tt.wantSource {
				t.Errorf("status %d source %q, want %d %q (%v)", dr.Status, dr.ErrorSource, tt.wantStatus, tt.wantSource, dr.Error)
			}
			if !strings.Contains(dr.Error.Error(), tt.want) {
				t.Errorf("error %q lacks %q", dr.Error, tt.want)
			}
			if n := len(fake.Calls()); n != tt.wantCalls {
				t.Errorf("%d upstream calls, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestQueryErrorsDoNotLeakSecrets(t *testing.T) {
	s := testSettings("")
	fake := &fakeUpstream{answer: func(call) (*fakeResponse, error) {
		return nil, &promclient.APIError{Status: 403, Type: "SignatureDoesNotMatch",
			Message: "String-to-sign used " + s.DecryptedSecureJSONData["secretKey"] + " and X-Amz-Security-Token=FQoGZXIvYXdzEXAMPLE"}
	}}
	d := newTestDatasource(t, fake)
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{dataQuery("A", `{"expr":"up"}`)}})
	msg := resp.Responses["A"].Error.Error()
	for _, leak := range []string{s.DecryptedSecureJSONData["secretKey"], "FQoGZXIvYXdzEXAMPLE"} {
		if strings.Contains(msg, leak) {
			t.Errorf("error leaks %q: %s", leak, msg)
		}
	}
}

func TestQuerySettingsErrorReachesEveryQuery(t *testing.T) {
	d, err := New(context.Background(), testSettings(`{"authType":"keys","defaultRegion":"us-east-1","httpMethod":"PUT","endpoint":"http://127.0.0.1:9"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("A", `{"expr":"up"}`), dataQuery("B", `{"expr":"up"}`),
	}})
	for _, ref := range []string{"A", "B"} {
		dr := resp.Responses[ref]
		if dr.Error == nil || !strings.Contains(dr.Error.Error(), "jsonData.httpMethod") || dr.ErrorSource != backend.ErrorSourceDownstream {
			t.Errorf("%s: %+v, want a downstream error naming jsonData.httpMethod", ref, dr)
		}
	}
}

func TestQueryRefIDsAndAlerting(t *testing.T) {
	fake := &fakeUpstream{answer: answerByOp(map[string]string{"query_range": matrixBody, "query": vectorBody})}
	d := newTestDatasource(t, fake)
	req := &backend.QueryDataRequest{
		Headers: map[string]string{"FromAlert": "true"},
		Queries: []backend.DataQuery{
			dataQuery("A", `{"expr":"up","range":true}`),
			dataQuery("B", `{"expr":"up","instant":true}`),
			dataQuery("C", `{"expr":"up","range":true,"instant":true}`),
		},
	}
	resp, err := d.QueryData(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := map[string][]data.FrameType{
		"A": {data.FrameTypeTimeSeriesMulti, data.FrameTypeTimeSeriesMulti},
		"B": {data.FrameTypeNumericMulti},
		"C": {data.FrameTypeTimeSeriesMulti, data.FrameTypeTimeSeriesMulti, data.FrameTypeNumericMulti},
	}
	for ref, types := range wantTypes {
		dr := resp.Responses[ref]
		if dr.Error != nil {
			t.Fatalf("%s: %v", ref, dr.Error)
		}
		if len(dr.Frames) != len(types) {
			t.Fatalf("%s: %d frames, want %d", ref, len(dr.Frames), len(types))
		}
		for i, f := range dr.Frames {
			if f.RefID != ref {
				t.Errorf("%s frame %d has refId %q", ref, i, f.RefID)
			}
			if f.Meta == nil || f.Meta.Type != types[i] {
				t.Errorf("%s frame %d: meta %+v, want type %s", ref, i, f.Meta, types[i])
			}
		}
	}
}

func TestQueriesRunInParallelWithinTheBound(t *testing.T) {
	const queries, limit = 6, 2
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		inflight int
		most     int
		finished int
	)
	fake := &fakeUpstream{answer: func(call) (*fakeResponse, error) {
		mu.Lock()
		inflight++
		most = max(most, inflight)
		cond.Broadcast()
		// Wait for a partner so that a serial implementation shows up as most == 1; the
		// last query has none. The deadline only keeps a broken implementation from hanging.
		deadline := time.Now().Add(5 * time.Second)
		for inflight < limit && finished < queries-1 && time.Now().Before(deadline) {
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
		}
		inflight--
		finished++
		mu.Unlock()
		return okJSON(matrixBody), nil
	}}
	d := newTestDatasource(t, fake)
	ctx := backend.WithGrafanaConfig(context.Background(), backend.NewGrafanaCfg(map[string]string{"GF_CONCURRENT_QUERY_COUNT": fmt.Sprint(limit)}))
	req := &backend.QueryDataRequest{}
	for i := range queries {
		// Distinct expressions: identical ones would share one upstream call (results cache).
		req.Queries = append(req.Queries, dataQuery(fmt.Sprintf("Q%d", i), fmt.Sprintf(`{"expr":"up%d"}`, i)))
	}
	resp, err := d.QueryData(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Responses) != queries {
		t.Fatalf("%d responses, want %d", len(resp.Responses), queries)
	}
	if most != limit {
		t.Errorf("at most %d queries ran at once, want exactly the bound %d", most, limit)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	tests := []struct {
		cfg  map[string]string
		want int
	}{
		{nil, defaultConcurrentQueries},
		{map[string]string{"GF_CONCURRENT_QUERY_COUNT": "4"}, 4},
		{map[string]string{"GF_CONCURRENT_QUERY_COUNT": "0"}, defaultConcurrentQueries},
		{map[string]string{"GF_CONCURRENT_QUERY_COUNT": "many"}, defaultConcurrentQueries},
	}
	for _, tt := range tests {
		ctx := context.Background()
		if tt.cfg != nil {
			ctx = backend.WithGrafanaConfig(ctx, backend.NewGrafanaCfg(tt.cfg))
		}
		if got := concurrencyLimit(ctx); got != tt.want {
			t.Errorf("%v: %d, want %d", tt.cfg, got, tt.want)
		}
	}
}
