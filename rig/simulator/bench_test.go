package simulator

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// openBenchDB opens a TSDB configured like rig/stack's (temp dir, no WAL).
func openBenchDB(b *testing.B) *tsdb.DB {
	opts := tsdb.DefaultOptions()
	opts.WALSegmentSize = -1
	db, err := tsdb.Open(b.TempDir(), nil, nil, opts, nil)
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// peakHeap samples the heap in use until stopped and returns the largest value in MiB.
func peakHeap() (stop func() float64) {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		peak = max(peak, m.HeapInuse)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() float64 {
		close(done)
		wg.Wait()
		sample()
		return float64(peak) / (1 << 20)
	}
}

// cpuSeconds is the process's user+system CPU time: on a shared machine it says more than
// the wall clock about what a backfill costs.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkBackfill backfills 24 h at 60 s of 200 instances x 8 GPUs with the full metric
// set into a TSDB (simulator), against a baseline measured in the same run: appending the
// same number of float samples to as many pre-built series with cached refs and nothing
// else (tsdb-floor), the cost of storage alone. The ratio of the two is the simulator's
// overhead.
// benchHistory is a variable so a profile can be taken on a shorter run.
var benchHistory = 24 * time.Hour

func BenchmarkBackfill(b *testing.B) {
	history, step := benchHistory, time.Minute
	end := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var series, samples int
	b.Run("simulator", func(b *testing.B) {
		for range b.N {
			runtime.GC()
			db := openBenchDB(b)
			sim, err := New(fleet.Large(200, 8), "healthy", 1)
			if err != nil {
				b.Fatal(err)
			}
			stop := peakHeap()
			start, cpu := time.Now(), cpuSeconds(b)
			st, err := sim.Backfill(context.Background(), db, end.Add(-history), end, step)
			if err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			b.ReportMetric(cpuSeconds(b)-cpu, "cpu-s")
			b.ReportMetric(stop(), "peak-heap-MiB")
			series, samples = st.Series, st.Samples
			b.ReportMetric(float64(st.Series), "series")
			b.ReportMetric(float64(st.Samples), "samples")
			b.ReportMetric(float64(st.Samples)/elapsed.Seconds(), "samples/s")
			_ = db.Close()
		}
	})
	b.Run("tsdb-floor", func(b *testing.B) {
		if series == 0 {
			b.Skip("run with the simulator sub-benchmark: it sizes the baseline")
		}
		perStep := samples / int(history/step+1)
		for range b.N {
			runtime.GC()
			db := openBenchDB(b)
			refs := make([]storage.SeriesRef, perStep)
			lset := make([]labels.Labels, perStep)
			for i := range lset {
				lset[i] = labels.FromStrings("__name__", "floor", "i", strconv.Itoa(i))
			}
			stop := peakHeap()
			start, cpu := time.Now(), cpuSeconds(b)
			n := 0
			for t := end.Add(-history).UnixMilli(); t <= end.UnixMilli(); t += step.Milliseconds() {
				app := db.Appender(context.Background())
				for i := range refs {
					ref, err := app.Append(refs[i], lset[i], t, float64(i+n))
					if err != nil {
						b.Fatal(err)
					}
					refs[i] = ref
					n++
				}
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			elapsed := time.Since(start)
			b.ReportMetric(cpuSeconds(b)-cpu, "cpu-s")
			b.ReportMetric(stop(), "peak-heap-MiB")
			b.ReportMetric(float64(perStep), "series")
			b.ReportMetric(float64(n)/elapsed.Seconds(), "samples/s")
			_ = db.Close()
		}
	})
}
