package rcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// panel is a dashboard panel's answer: series GPUs' utilization (two decimals) over steps
// one-minute steps ending at end.
func panel(series, steps int, end time.Time) *promclient.Answer {
	r := rand.New(rand.NewPCG(uint64(series), 1)) // #nosec G404 -- seeded test data
	ts := make([]int64, steps)
	for i := range ts {
		ts[i] = end.Add(-time.Duration(steps-1-i) * time.Minute).UnixMilli()
	}
	a := &promclient.Answer{Type: "matrix"}
	for i := range series {
		vs := make([]float64, steps)
		for j := range vs {
			vs[j] = float64(r.IntN(10001)) / 100
		}
		a.Series = append(a.Series, promclient.Series{Labels: map[string]string{
			"__name__": "gpu_utilization", "gpu": strconv.Itoa(i % 8), "instance_id": fmt.Sprintf("i-%017x", i/8), "region": "us-east-1",
		}, T: ts, V: vs})
	}
	return a
}

// BenchmarkSharedHit: a panel's range query served from another replica's extent in the
// store (a new replica's first request: GET over loopback, decode, merge, assemble)
// against a hit in the local cache (assemble), measured alternately in the same run: p50,
// p99, their ratio, and the store's memory per cached sample (MEMORY USAGE); and the
// largest value and slowest single GET of the extent's keys, which must fit in the store's
// per-operation deadline.
func BenchmarkSharedHit(b *testing.B) {
	for _, series := range []int{64, 1600} {
		b.Run(fmt.Sprint(series, "x360"), func(b *testing.B) {
			srv := storetest.Start(b)
			now := time.Date(2026, 12, 7, 6, 0, 20, 0, time.UTC)
			step := time.Minute
			end := now.Truncate(step)
			start := end.Add(-359 * step)
			answer := panel(series, 360, end)
			fetch := func(context.Context, time.Time, time.Time) (*promclient.Answer, error) { return answer, nil }
			k := Key{DataSource: "a", Expr: "gpu_utilization", Step: step}
			opts := Options{Now: func() time.Time { return now }, RefetchWindow: DefaultRefetchWindow}
			cs, ps := replicas(b, srv, "ds1", 2, time.Second, opts)
			ctx := context.Background()
			if _, res, err := cs[0].QueryRange(ctx, k, start, end, fetch); err != nil || res.Outcome != Miss || res.StoreErr != nil {
				b.Fatalf("cold load: %s %v %v", res.Outcome, err, res.StoreErr)
			}
			raw := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
			defer raw.Close()
			key := ps[0].Key(rangeName(k, mod(start.UnixMilli(), step.Milliseconds())))
			// The extent's keys: its entry and, when the store chunks it, its chunks.
			keys, err := raw.Keys(ctx, key+"*").Result()
			if err != nil {
				b.Fatal(err)
			}
			var used, largest int64
			for _, k := range keys {
				n, err := raw.MemoryUsage(ctx, k).Result()
				if err != nil {
					b.Fatal(err)
				}
				used += n
				largest = max(largest, raw.StrLen(ctx, k).Val())
			}
			opts.Peer = ps[1].Peer
			var fromStore, fromLocal, gets []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, res, err := New(opts).QueryRange(ctx, k, start, end, fetch); err != nil || res.Outcome != SharedHit {
					b.Fatalf("store hit: %s %v %v", res.Outcome, err, res.StoreErr)
				}
				t1 := time.Now()
				if _, res, err := cs[0].QueryRange(ctx, k, start, end, fetch); err != nil || res.Outcome != Hit {
					b.Fatalf("local hit: %s %v", res.Outcome, err)
				}
				t2 := time.Now()
				// The slowest single GET of the extent's keys: what must fit in the store's
				// deadline (50 ms by default).
				var slowest time.Duration
				for _, k := range keys {
					t3 := time.Now()
					if err := raw.Get(ctx, k).Err(); err != nil {
						b.Fatal(err)
					}
					slowest = max(slowest, time.Since(t3))
				}
				fromStore, fromLocal, gets = append(fromStore, t1.Sub(t0)), append(fromLocal, t2.Sub(t1)), append(gets, slowest)
			}
			pct := func(d []time.Duration, p float64) float64 {
				slices.Sort(d)
				return float64(d[int(p*float64(len(d)-1))].Microseconds())
			}
			b.ReportMetric(float64(used)/float64(series*360), "store-B/sample")
			b.ReportMetric(pct(fromStore, 0.5), "store-p50-µs")
			b.ReportMetric(pct(fromStore, 0.99), "store-p99-µs")
			b.ReportMetric(float64(largest), "largest-value-B")
			b.ReportMetric(pct(gets, 0.5), "get-p50-µs")
			b.ReportMetric(pct(gets, 0.99), "get-p99-µs")
			b.ReportMetric(pct(fromLocal, 0.5), "local-p50-µs")
			b.ReportMetric(pct(fromLocal, 0.99), "local-p99-µs")
			b.ReportMetric(pct(fromStore, 0.5)/max(pct(fromLocal, 0.5), 1), "store/local-p50")
			b.ReportMetric(pct(fromStore, 0.99)/max(pct(fromLocal, 0.99), 1), "store/local-p99")
		})
	}
}
