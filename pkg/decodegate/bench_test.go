package decodegate

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/internal/promtest"
	"github.com/inferscope/sagemaker-datasource/pkg/converter"
)

const smallAnswer = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"42"]}]}}`

// BenchmarkSmallBesideLarge measures what the gate is for: a stat panel's one-sample answer
// fetched over loopback HTTP and converted (request to frames) while four range answers of
// 150 series × 1440 points (the BigAnswer shape, ~5 MB) are converted over and over on
// every core, as when a dashboard's heavy panels load. In each round the same background
// runs ungated (the baseline) and through a gate with the default tokens, one after the
// other; idle is the small answer with nothing else running. It reports the median and
// 90th percentile small latency of each, and the large conversions finished per second
// (the cost to heavy panels).
func BenchmarkSmallBesideLarge(b *testing.B) {
	large := promtest.LargeMatrix(150, 1440)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, smallAnswer)
	}))
	defer srv.Close()
	small := func() time.Duration {
		start := time.Now()
		resp, err := http.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var frames data.Frames
		if err := converter.Decode(converter.Options{Step: time.Minute}, &frames)(resp.Body); err != nil || len(frames) != 1 {
			b.Fatalf("small answer: %v, %d frames", err, len(frames))
		}
		return time.Since(start)
	}
	type result struct {
		lat        []time.Duration
		largePerS  float64
		largeTotal int64
	}
	run := func(g *Gate) result {
		var (
			stop atomic.Bool
			done atomic.Int64
			wg   sync.WaitGroup
		)
		started := time.Now()
		for range 4 {
			wg.Go(func() {
				for !stop.Load() {
					var frames data.Frames
					decode := converter.Decode(converter.Options{Step: 15 * time.Second}, &frames)
					if g != nil {
						decode = g.Wrap(decode)
					}
					if err := decode(bytes.NewReader(large)); err != nil {
						b.Error(err)
						return
					}
					done.Add(1)
				}
			})
		}
		time.Sleep(100 * time.Millisecond)
		var r result
		for range 30 {
			r.lat = append(r.lat, small())
			time.Sleep(10 * time.Millisecond)
		}
		stop.Store(true)
		wg.Wait()
		r.largeTotal = done.Load()
		r.largePerS = float64(r.largeTotal) / time.Since(started).Seconds()
		return r
	}
	idle := func() result {
		var r result
		for range 30 {
			r.lat = append(r.lat, small())
			time.Sleep(10 * time.Millisecond)
		}
		return r
	}
	var base, gated, quiet result
	gate := New(0, DefaultThreshold)
	b.ResetTimer()
	for range b.N {
		q, u, g := idle(), run(nil), run(gate)
		quiet.lat = append(quiet.lat, q.lat...)
		base.lat, base.largeTotal, base.largePerS = append(base.lat, u.lat...), base.largeTotal+u.largeTotal, base.largePerS+u.largePerS/float64(b.N)
		gated.lat, gated.largeTotal, gated.largePerS = append(gated.lat, g.lat...), gated.largeTotal+g.largeTotal, gated.largePerS+g.largePerS/float64(b.N)
	}
	pct := func(l []time.Duration, p int) float64 {
		s := slices.Sorted(slices.Values(l))
		return float64(s[len(s)*p/100]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(quiet.lat, 50), "idle-p50-ms")
	b.ReportMetric(pct(base.lat, 50), "ungated-p50-ms")
	b.ReportMetric(pct(gated.lat, 50), "gated-p50-ms")
	b.ReportMetric(pct(base.lat, 90), "ungated-p90-ms")
	b.ReportMetric(pct(gated.lat, 90), "gated-p90-ms")
	b.ReportMetric(base.largePerS, "ungated-large/s")
	b.ReportMetric(gated.largePerS, "gated-large/s")
	fmt.Printf("small answer beside large conversions (%d rounds): idle p50 %.2f ms; ungated p50 %.2f / p90 %.2f ms, %.2f large/s; gated (%d tokens) p50 %.2f / p90 %.2f ms, %.2f large/s\n",
		b.N, pct(quiet.lat, 50), pct(base.lat, 50), pct(base.lat, 90), base.largePerS, cap(gate.tokens), pct(gated.lat, 50), pct(gated.lat, 90), gated.largePerS)
}
