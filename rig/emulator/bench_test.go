package emulator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// BenchmarkQueryOverhead measures what the emulator adds to a dashboard-style range
// query (HTTP, form parsing, CloudWatch checks, aliasing, JSON) against the bare engine
// on the same data in the same run, and reports the ratio.
func BenchmarkQueryOverhead(b *testing.B) {
	const (
		hosts = 100
		span  = 6 * time.Hour
	)
	db := openDB(b)
	app := db.Appender(context.Background())
	for h := range hosts {
		ls := labels.FromStrings(labels.MetricName, "DCGM_FI_DEV_GPU_UTIL",
			"@resource.host.id", fmt.Sprintf("i-%04d", h), "aws.sagemaker.endpoint.name", fmt.Sprintf("ep-%d", h%5))
		for ts := t0.Add(-span); !ts.After(t0); ts = ts.Add(time.Minute) {
			if _, err := app.Append(0, ls, ts.UnixMilli(), float64(h%100)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		b.Fatal(err)
	}
	query := `avg by ("aws.sagemaker.endpoint.name") (avg_over_time({"DCGM_FI_DEV_GPU_UTIL"}[5m]))`
	start, end, step := t0.Add(-span), t0, time.Minute

	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: maxSamples, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, Parser: parser.NewParser(parser.Options{})})
	baseline := func() {
		q, err := engine.NewRangeQuery(context.Background(), db, nil, query, start, end, step)
		if err != nil {
			b.Fatal(err)
		}
		if res := q.Exec(context.Background()); res.Err != nil {
			b.Fatal(res.Err)
		}
		q.Close()
	}
	form := url.Values{"query": {query}, "start": {unix(start)}, "end": {unix(end)}, "step": {"60"}}.Encode()
	configs := []struct {
		name   string
		limits Limits
	}{
		{"defaults", Limits{QueryTPS: -1}},
		{"scan caps off", Limits{QueryTPS: -1, SeriesScannedPerDay: -1, SamplesScannedPerDay: -1}},
	}
	for _, c := range configs {
		b.Run(c.name, func(b *testing.B) {
			srv := serve(b, Config{Limits: c.limits}, db)
			viaEmulator := func() {
				resp, err := http.Post(srv.URL+"/api/v1/query_range", "application/x-www-form-urlencoded", strings.NewReader(form))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			var base, emu time.Duration
			for b.Loop() {
				t := time.Now()
				baseline()
				base += time.Since(t)
				t = time.Now()
				viaEmulator()
				emu += time.Since(t)
			}
			b.ReportMetric(float64(emu.Nanoseconds())/float64(b.N), "emulator-ns/query")
			b.ReportMetric(float64(emu)/float64(base), "x-engine-alone")
		})
	}
}
