package dashboards_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/dashload"
)

// BenchmarkDashboardRefresh loads all three dashboards against the 200 × 8 fleet (live,
// 6 h of history), then refreshes each 30 s, 60 s and 120 s later (real time, so the
// cache's one-step rule and re-fetch window behave as in Grafana), uncached and with a new
// data source's defaults, and reports per dashboard what a refresh costs against the same
// run's cold load. It also times each cold load's stat panels against their own upstream
// time in that load. Run with -benchtime 1x; it takes several minutes.
func BenchmarkDashboardRefresh(b *testing.B) {
	meter, newDS := startBenchStack(b)
	dashes := benchDashboards(b)
	// What Grafana sends: the interval raised to the data source's min interval (the
	// frontend sets the data source's interval from timeInterval), so the panels without a
	// min step of their own run at the 60 s step.
	dashload.RaiseInterval(dashes, benchPeriod)
	offsets := []time.Duration{0, 30 * time.Second, 60 * time.Second, 120 * time.Second}
	labels := []string{"+30s", "+60s", "+120s"}
	b.ResetTimer()
	for range b.N {
		for _, mode := range benchModes {
			ds := newDS(mode.name, mode.extra)
			modeStart := meter.Count()
			// Each dashboard's refreshes are timed from its own cold load; on a busy machine a
			// load can take longer than the gap, so the actual offsets are reported.
			results := make([][]dashload.Result, len(offsets)) // per offset, per dashboard
			coldAt := make([]time.Time, len(dashes))
			for step, offset := range offsets {
				for i, dl := range dashes {
					if step == 0 {
						coldAt[i] = time.Now()
					}
					time.Sleep(time.Until(coldAt[i].Add(offset)))
					r := dashload.Load(ds, meter, dl, time.Now())
					r.Offset = r.Started.Sub(coldAt[i])
					results[step] = append(results[step], r)
				}
			}
			ds.Dispose()
			history := meter.Since(modeStart)
			for i, dl := range dashes {
				cold := results[0][i]
				for _, rs := range results {
					for _, e := range rs[i].Errors {
						fmt.Printf("%s %s: %s\n", mode.name, dl.Name, e)
					}
				}
				for step, label := range labels {
					r := results[step+1][i]
					fmt.Printf("%-9s %-12s cold %3d calls %8.1f KiB %10.0f samples (%4.1fs) | %s at +%3.0fs (%4.1fs) %3d calls (%3.0f%%) %8.1f KiB (%5.1f%%) %10.0f samples (%5.1f%%) | throttled %d, 422 timeouts %d, 422s given again without a call %d\n",
						mode.name, dl.Name, len(cold.Calls), float64(cold.Bytes)/1024, cold.Samples, cold.Took.Seconds(), label, r.Offset.Seconds(), r.Took.Seconds(),
						len(r.Calls), pct(len(r.Calls), len(cold.Calls)), float64(r.Bytes)/1024, pct(r.Bytes, cold.Bytes), r.Samples, 100*r.Samples/max(cold.Samples, 1),
						cold.Throttled+r.Throttled, cold.Timeout422+r.Timeout422, r.KeptFailures)
				}
				statPaint(mode.name, dl, cold)
				if mode.extra == nil { // with the cache: which calls a refresh still makes, and why
					for step, label := range labels {
						r := results[step+1][i]
						earlier := slices.DeleteFunc(slices.Clone(history), func(c dashload.Call) bool { return !c.Start.Before(r.Started) })
						printRefreshCalls(mode.name, dl.Name, label, r, earlier, benchPeriod)
					}
				}
			}
		}
	}
}

func pct[T int | int64](a, b T) float64 { return 100 * float64(a) / float64(max(b, 1)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
