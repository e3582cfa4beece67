package emulator

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// histPoint mirrors Prometheus' API shape for one native histogram sample.
type histPoint struct {
	Count   string  `json:"count"`
	Sum     string  `json:"sum"`
	Buckets [][]any `json:"buckets"`
}

// decodeHistPair decodes [ts, {count, sum, buckets}].
func decodeHistPair(t *testing.T, raw json.RawMessage) (float64, histPoint) {
	t.Helper()
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		t.Fatalf("histogram sample %s is not [ts, {...}]: %v", raw, err)
	}
	var ts float64
	var h histPoint
	if err := json.Unmarshal(pair[0], &ts); err != nil {
		t.Fatalf("timestamp %s: %v", pair[0], err)
	}
	if err := json.Unmarshal(pair[1], &h); err != nil {
		t.Fatalf("histogram %s: %v", pair[1], err)
	}
	return ts, h
}

func TestNativeHistogramShape(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	sel := `{"vllm:time_to_first_token_seconds", "aws.sagemaker.endpoint.name"="ep-1"}`

	r := call(t, nil, srv.URL, "POST", "/api/v1/query", v("query", sel))
	q := decodeQuery(t, r)
	if r.status != http.StatusOK || len(q.Result) != 1 {
		t.Fatalf("instant: status %d, %d series: %s", r.status, len(q.Result), r.raw)
	}
	got := q.Result[0]
	if got.Value != nil || got.Histogram == nil {
		t.Fatalf("instant histogram sample must use \"histogram\", not \"value\": %s", r.raw)
	}
	if got.Metric["@resource.host.id"] != "i-0abc" || got.Metric["aws.sagemaker.inference_component.name"] != "ic-a" {
		t.Errorf("dotted and @ labels missing: %v", got.Metric)
	}
	ts, h := decodeHistPair(t, got.Histogram)
	// At t0 the seeded sample is minute 60: count 610, sum 122, buckets 366 and 244.
	want := histPoint{Count: "610", Sum: "122", Buckets: [][]any{{0.0, "0.5", "1", "366"}, {0.0, "1", "2", "244"}}}
	if ts != float64(t0.Unix()) || h.Count != want.Count || h.Sum != want.Sum || !sameJSON(h.Buckets, want.Buckets) {
		t.Errorf("instant histogram at %v = %+v, want %+v at %v", ts, h, want, t0.Unix())
	}

	r = call(t, nil, srv.URL, "GET", "/api/v1/query_range", v("query", sel,
		"start", unix(t0.Add(-2*time.Minute)), "end", unix(t0), "step", "60"))
	q = decodeQuery(t, r)
	if r.status != http.StatusOK || len(q.Result) != 1 || q.Result[0].Values != nil {
		t.Fatalf("range: status %d; want one series with \"histograms\" only: %s", r.status, r.raw)
	}
	var pts []json.RawMessage
	if err := json.Unmarshal(q.Result[0].Histograms, &pts); err != nil || len(pts) != 3 {
		t.Fatalf("range histograms: %d points (%v): %s", len(pts), err, r.raw)
	}
	for i, p := range pts {
		_, h := decodeHistPair(t, p)
		if wantCount := strconv.Itoa(10 * (59 + i)); h.Count != wantCount {
			t.Errorf("point %d count %s, want %s", i, h.Count, wantCount)
		}
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestHistogramFunctions runs the CloudWatch example patterns over the native histogram.
func TestHistogramFunctions(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	sel := `{"vllm:time_to_first_token_seconds"}`
	scalarOf := func(t *testing.T, raw json.RawMessage) float64 {
		var pair []any
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			t.Fatalf("value %s: %v", raw, err)
		}
		f, err := strconv.ParseFloat(pair[1].(string), 64)
		if err != nil {
			t.Fatalf("value %s: %v", raw, err)
		}
		return f
	}
	cases := []struct {
		name, query string
		label       string // label the single result must carry
		lo, hi      float64
	}{
		// The count grows by 10 a minute, so its rate is 1/6 per second.
		{"rate of count", `sum(histogram_count(rate(` + sel + `[5m])))`, "", 1.0/6 - 1e-9, 1.0/6 + 1e-9},
		{"quantile by dotted label", `histogram_quantile(0.5, sum by ("aws.sagemaker.endpoint.name") (rate(` + sel + `[5m])))`, "aws.sagemaker.endpoint.name", 0.5, 1},
		{"avg", `histogram_avg(` + sel + `)`, "@resource.host.id", 0.2 - 1e-9, 0.2 + 1e-9},
		{"delta pattern", `sum(histogram_count(sum_over_time(` + sel + `[2m])))`, "", 610 + 600, 610 + 600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, nil, srv.URL, "GET", "/api/v1/query", v("query", tc.query))
			q := decodeQuery(t, r)
			if r.status != http.StatusOK || len(q.Result) != 1 {
				t.Fatalf("status %d, %d series: %s", r.status, len(q.Result), r.raw)
			}
			if tc.label != "" && q.Result[0].Metric[tc.label] == "" {
				t.Errorf("result lacks %q: %v", tc.label, q.Result[0].Metric)
			}
			if f := scalarOf(t, q.Result[0].Value); !(f >= tc.lo && f <= tc.hi) || math.IsNaN(f) {
				t.Errorf("value %v, want in [%v, %v]", f, tc.lo, tc.hi)
			}
		})
	}

	// min/max skip histogram samples and say so in infos, not warnings (CloudWatch notes §10.3).
	r := call(t, nil, srv.URL, "GET", "/api/v1/query", v("query", "max("+sel+")"))
	if r.status != http.StatusOK || len(decodeQuery(t, r).Result) != 0 {
		t.Fatalf("max over histograms: status %d: %s", r.status, r.raw)
	}
	if len(r.env.Infos) == 0 || !strings.Contains(strings.Join(r.env.Infos, " "), "ignored histogram") {
		t.Errorf("infos %q should mention the ignored histograms (warnings %q)", r.env.Infos, r.env.Warnings)
	}
}
