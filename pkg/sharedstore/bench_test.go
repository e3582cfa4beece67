package sharedstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry/entrytest"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// BenchmarkExtentHit: a panel's cached extent (8 instances × 8 GPUs, 6 h of 1-minute
// steps) served from the store (GET over loopback + decode) against decoding the same
// bytes from memory, measured alternately in the same run; their ratio, p50 and p99; and
// the bytes per sample of the encoding and of the store's memory for the key.
func BenchmarkExtentHit(b *testing.B) {
	srv := storetest.Start(b)
	st, err := Open(Settings{Addresses: []string{srv.Addr}, KeyPrefix: "bench:", Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	e := entrytest.Extent(42, 8, 360)
	enc, err := entry.Encode(e)
	if err != nil {
		b.Fatal(err)
	}
	samples := 0
	for _, s := range e.Series {
		samples += len(s.T)
	}
	const key = "bench:{panel}"
	if err := st.PutExtent(ctx, key, e, time.Hour); err != nil {
		b.Fatal(err)
	}
	used, err := st.rdb.MemoryUsage(ctx, key).Result()
	if err != nil {
		b.Fatal(err)
	}
	var fromStore, fromMemory []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, ok, err := st.GetExtent(ctx, key); err != nil || !ok {
			b.Fatalf("store hit: %v %v", ok, err)
		}
		t1 := time.Now()
		if _, err := entry.Decode(enc); err != nil {
			b.Fatal(err)
		}
		fromStore, fromMemory = append(fromStore, t1.Sub(t0)), append(fromMemory, time.Since(t1))
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds())
	}
	b.ReportMetric(float64(samples), "samples")
	b.ReportMetric(float64(len(enc))/float64(samples), "enc-B/sample")
	b.ReportMetric(float64(used)/float64(samples), "store-B/sample")
	b.ReportMetric(pct(fromStore, 0.5), "store-p50-µs")
	b.ReportMetric(pct(fromStore, 0.99), "store-p99-µs")
	b.ReportMetric(pct(fromMemory, 0.5), "memory-p50-µs")
	b.ReportMetric(pct(fromMemory, 0.99), "memory-p99-µs")
	b.ReportMetric(pct(fromStore, 0.5)/max(pct(fromMemory, 0.5), 1), "store/memory-p50")
}

// BenchmarkEncode: the cost of encoding a panel's extent, and its size per sample with
// each value shape the generator mixes (two-decimal utilization, whole counts, constants,
// large floats with stale markers).
func BenchmarkEncode(b *testing.B) {
	e := entrytest.Extent(42, 8, 360)
	samples := 0
	for _, s := range e.Series {
		samples += len(s.T)
	}
	var size int
	for b.Loop() {
		enc, err := entry.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		size = len(enc)
	}
	b.ReportMetric(float64(size)/float64(samples), "B/sample")
}
