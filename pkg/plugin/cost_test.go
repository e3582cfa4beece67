package plugin

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

func TestSamplesPerPoint(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want int64
	}{
		{"up", 1},
		{"rate(x[5m])", 5},
		{"sum_over_time(x[1h]) / rate(y[5m])", 60},
		{"max_over_time(rate(x[5m])[1h:1m])", 60},
		{"x[30s]", 1},
		{`{"@resource.host.id"="a[1]"}`, 1},
	} {
		if got := samplesPerPoint(tc.expr, time.Minute); got != tc.want {
			t.Errorf("samplesPerPoint(%q) = %d, want %d", tc.expr, got, tc.want)
		}
	}
}

// TestCostMeter: a range query's frame states its estimated samples scanned (points ×
// window) and their cost at the configured price; a refresh served by the cache scans less.
func TestCostMeter(t *testing.T) {
	var points int
	fake := &fakeUpstream{answer: generated(&points)}
	d := datasourceWith(t, `,"costPerMillionSamples":2`, fake)
	q := dataQuery("A", `{"expr":"rate(m[5m])","range":true}`)
	now := time.Now()
	q.TimeRange = backend.TimeRange{From: now.Add(-6 * time.Hour), To: now}
	stat := func() (samples, cost float64) {
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil || resp.Responses["A"].Error != nil {
			t.Fatal(err, resp.Responses["A"].Error)
		}
		for _, s := range resp.Responses["A"].Frames[0].Meta.Stats {
			switch {
			case s.DisplayName == "Samples scanned (estimate)":
				samples = s.Value
			case strings.HasPrefix(s.DisplayName, "Estimated cost (USD at $2 per 1M samples"):
				cost = s.Value
			}
		}
		return samples, cost
	}
	before := points
	samples, cost := stat()
	if want := float64((points - before) * 5); samples != want || cost != want/1e6*2 {
		t.Errorf("cold: samples %v cost %v, want %v and %v", samples, cost, want, want/1e6*2)
	}
	// Two steps on, past what the cache serves without a call: it fetches the tail.
	q.TimeRange = backend.TimeRange{From: now.Add(-6*time.Hour + 2*time.Minute), To: now.Add(2 * time.Minute)}
	refreshed, _ := stat()
	if refreshed <= 0 || refreshed*10 > samples {
		t.Errorf("refresh scanned %v samples, cold %v: want a small, nonzero share", refreshed, samples)
	}
}

// TestCostMeterInstantFromCache: an instant answer reused from the cache scanned nothing,
// and its stats say the cache served it without an upstream call.
func TestCostMeterInstantFromCache(t *testing.T) {
	var points int
	d := datasourceWith(t, "", &fakeUpstream{answer: generated(&points)})
	q := dataQuery("S", `{"expr":"sum(up)","instant":true}`)
	q.TimeRange = backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}
	var got []float64
	var calls []map[string]float64
	for range 2 {
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil || resp.Responses["S"].Error != nil {
			t.Fatal(err, resp.Responses["S"].Error)
		}
		cache := map[string]float64{}
		for _, s := range resp.Responses["S"].Frames[0].Meta.Stats {
			switch {
			case s.DisplayName == "Samples scanned (estimate)":
				got = append(got, s.Value)
			case strings.HasPrefix(s.DisplayName, cacheStatPrefix):
				cache[s.DisplayName] = s.Value
			}
		}
		calls = append(calls, cache)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 0 {
		t.Errorf("samples scanned %v, want [1 0] (fetched, then reused)", got)
	}
	want := []map[string]float64{{cacheStatName(rcache.Miss): 1}, {cacheStatName(rcache.Hit): 0}}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("cache stats %v, want %v", calls, want)
	}
}
