package replicas_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// BenchmarkReplicas runs plugin processes, replicas of one data source, against one
// emulator (fleet.Large(200, 8), 6 h of history, live, CloudWatch's limits counted per
// account) and one redis-server, and measures in one run:
//   - upstream calls of every replica opening the three dashboards at once and refreshing
//     them 60 s later: one replica alone, four sharing the store, four without it;
//   - the account's 422 (rate) and 429 (concurrency) answers in each;
//   - a panel read from the store by a new replica vs from its own memory (p50, p99), and
//     the store's bytes per cached sample;
//   - the store paused, killed and restarted during four replicas' cold loads: failed
//     panels, the notice, and when new panels cost one replica's calls again.
//
// Run with -benchtime 1x; BENCH_INSTANCES=20 runs a smaller fleet.
func BenchmarkReplicas(b *testing.B) {
	instances := 200
	if n, err := strconv.Atoi(os.Getenv("BENCH_INSTANCES")); err == nil && n > 0 {
		instances = n
	}
	r := startRig(b, stack.Options{Fleet: fleet.Large(instances, 8), History: 6 * time.Hour, Live: true})
	dashes := fleetLoad(b, r.st)
	const refreshAfter = 60 * time.Second
	b.ResetTimer()
	for n := range b.N {
		fmt.Printf("fleet %d × 8, load average %s at the start\n", instances, loadAverage())
		type row struct {
			name          string
			cold, refresh phase
		}
		var rows []row
		var h hits
		var mem storeMemory
		for _, sc := range []struct {
			name     string
			replicas int
			jsonData map[string]any
		}{
			{"one replica", 1, nil},
			{"four, shared store", 4, r.shared(nil)},
			// The store's 50 ms deadline is for a store on its own machine; here four
			// replicas, the emulator and the store share two busy cores.
			{"four, shared store, timeout " + slowStore, 4, r.shared(map[string]any{"timeout": slowStore})},
			{"four, no store", 4, nil},
		} {
			ds := r.dataSource(fmt.Sprintf("bench-%d-%d", n, len(rows)), sc.jsonData)
			reps, stop := r.replicas(b, sc.replicas, ds, 1)
			var between func()
			if len(rows) == 1 { // the default store; while the refresh waits: what the cold loads left in the store
				between = func() {
					mem = readStoreMemory(b, r.store.Addr)
					h = measureHits(b, r, ds, dashes)
				}
			}
			cold, refresh := coldAndRefresh(r, clientsOf(reps), dashes, refreshAfter, between)
			stop()
			rows = append(rows, row{sc.name, cold, refresh})
			for _, ph := range []phase{cold, refresh} {
				for _, counts := range []map[string]int{ph.errors(), ph.notices(unavailable)} {
					for text, k := range counts {
						fmt.Printf("  %s: %d × %s\n", sc.name, k, text)
					}
				}
			}
			fmt.Printf("  %s done, load average %s\n", sc.name, loadAverage())
		}
		one := rows[0]
		// Panels that fail for one replica alone (at 200 × 8, the cost panels' 500-series
		// limit) are not the replicas' doing: failures are counted beyond them.
		alone := failedSet(one.cold, one.refresh)
		fmt.Printf("\n| replicas | cold load: calls (PromQL), 422, 429 (time) | refresh at +60 s: calls (PromQL), 422, 429 | calls vs one replica (PromQL) | failed panels (beyond one replica's) | store notices |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, rw := range rows {
			cc, c422, c429 := rw.cold.answers()
			rc, r422, r429 := rw.refresh.answers()
			fmt.Printf("| %s | %d (%d), %d, %d (%.1f s) | %d (%d), %d, %d | %.2f× (%.2f×) | %d (%d) | %d |\n", rw.name,
				cc, promQL(rw.cold), c422, c429, rw.cold.took.Seconds(), rc, promQL(rw.refresh), r422, r429,
				callsVs(rw.cold, rw.refresh, one.cold, one.refresh, false), callsVs(rw.cold, rw.refresh, one.cold, one.refresh, true),
				rw.cold.failedPanels(nil)+rw.refresh.failedPanels(nil), rw.cold.failedPanels(alone)+rw.refresh.failedPanels(alone), total(rw.cold.notices(unavailable))+total(rw.refresh.notices(unavailable)))
		}
		fmt.Printf("\n| replicas | cold load: calls by kind; PromQL call time at the emulator p50 / p90 | refresh: calls by kind |\n| --- | --- | --- |\n")
		for _, rw := range rows {
			p50, p90 := rw.cold.upstreamTime()
			fmt.Printf("| %s | %s; %.1f / %.1f s | %s |\n", rw.name, rw.cold.kinds(), p50.Seconds(), p90.Seconds(), rw.refresh.kinds())
		}
		shared, unshared := rows[1], rows[3]
		b.ReportMetric(float64(len(one.cold.calls)+len(one.refresh.calls)), "calls-one-replica")
		b.ReportMetric(callsVs(shared.cold, shared.refresh, one.cold, one.refresh, false), "x-one-with-store")
		b.ReportMetric(callsVs(unshared.cold, unshared.refresh, one.cold, one.refresh, false), "x-one-without-store")
		b.ReportMetric(callsVs(shared.cold, shared.refresh, one.cold, one.refresh, true), "x-one-promql-with-store")
		b.ReportMetric(callsVs(unshared.cold, unshared.refresh, one.cold, one.refresh, true), "x-one-promql-without-store")
		slow := rows[2]
		b.ReportMetric(callsVs(slow.cold, slow.refresh, one.cold, one.refresh, false), "x-one-with-store-"+slowStore)
		for unit, rw := range map[string]row{"-store": shared, "-store-" + slowStore: slow, "-nostore": unshared} {
			_, c422, c429 := rw.cold.answers()
			_, r422, r429 := rw.refresh.answers()
			b.ReportMetric(float64(c422+r422), "422"+unit)
			b.ReportMetric(float64(c429+r429), "429"+unit)
		}

		fmt.Printf("\npanels read without an upstream call, each alone through the plugin protocol, %d panels a pass:\n", h.panels)
		fmt.Printf("  from the store (a new replica): %d panels, p50 %.1f ms, p99 %.1f ms\n", len(h.store), ms(quantile(h.store, 0.5)), ms(quantile(h.store, 0.99)))
		fmt.Printf("  from its memory (again):        %d panels, p50 %.1f ms, p99 %.1f ms\n", len(h.local), ms(quantile(h.local, 0.5)), ms(quantile(h.local, 0.99)))
		fmt.Printf("store after the four replicas' cold loads: used_memory %.1f MiB, %d keys, %d extents (+%d that did not read back) of %d samples in %.1f MiB (MEMORY USAGE, heads and chunks): %.2f bytes per cached sample\n",
			float64(mem.used)/(1<<20), mem.keys, mem.extents, mem.lost, mem.samples, float64(mem.extentBytes)/(1<<20), mem.bytesPerSample())
		b.ReportMetric(ms(quantile(h.store, 0.5)), "ms-p50-store-hit")
		b.ReportMetric(ms(quantile(h.store, 0.99)), "ms-p99-store-hit")
		b.ReportMetric(ms(quantile(h.local, 0.5)), "ms-p50-local-hit")
		b.ReportMetric(ms(quantile(h.local, 0.99)), "ms-p99-local-hit")
		b.ReportMetric(mem.bytesPerSample(), "B/sample-in-store")

		f := runFaults(b, r, fmt.Sprintf("faults-%d", n), dashes, 5*time.Second, 90*time.Second)
		reportFaults(b, f, alone)
		fmt.Printf("load average %s at the end\n", loadAverage())
	}
}

// slowStore is the store timeout of the bench's second shared run.
const slowStore = "500ms"

// promQL counts a phase's calls to CloudWatch's PromQL API.
func promQL(p phase) int {
	n := 0
	for _, c := range p.calls {
		if isPromQL(c) {
			n++
		}
	}
	return n
}

// callsVs is a run's calls (cold load and refresh; PromQL's alone if only) against one
// replica's.
func callsVs(cold, refresh, oneCold, oneRefresh phase, only bool) float64 {
	count := func(p phase) int {
		if only {
			return promQL(p)
		}
		return len(p.calls)
	}
	return float64(count(cold)+count(refresh)) / float64(max(count(oneCold)+count(oneRefresh), 1))
}

// reportFaults prints a fault run's rounds and outcome and reports its metrics.
func reportFaults(b *testing.B, f faultRun, alone map[string]bool) {
	since := func(t time.Time) time.Duration { return t.Sub(f.load.began).Round(100 * time.Millisecond) }
	fmt.Printf("\nstore faults during the four replicas' cold loads (%.1f s): paused %s–%s, killed %s, restarted %s (since the load began)\n",
		f.load.took.Seconds(), since(f.paused), since(f.resumed), since(f.stopped), since(f.restarted))
	for _, r := range f.rounds {
		fmt.Printf("  probe round at %+6.1f s from the restart: %d panels, %d calls (%.2f×), %d failed, %d store notices\n",
			r.at.Sub(f.restarted).Seconds(), r.k, r.calls, r.ratio(), r.failed, r.unavailable)
	}
	calls, c422, c429 := f.load.answers()
	pf, pn := f.probeFailures()
	for e, k := range f.load.errors() {
		fmt.Printf("  faults: %d × %s\n", k, e)
	}
	fmt.Printf("cold loads under faults: %d calls, %d × 422, %d × 429, %d failed panels, %d beyond one replica's (+%d probe panels), %d store notices (+%d on probes); %s\n",
		calls, c422, c429, f.load.failedPanels(nil), f.load.failedPanels(alone), pf, total(f.load.notices(unavailable)), pn, recoveryText(f))
	b.ReportMetric(float64(f.load.failedPanels(alone)+pf), "failed-panels-faults")
	b.ReportMetric(float64(total(f.load.notices(unavailable))+pn), "notices-faults")
	if !f.recovered.IsZero() {
		b.ReportMetric(f.recovered.Sub(f.restarted).Seconds(), "s-to-shared-again")
	}
}

func recoveryText(f faultRun) string {
	if f.recovered.IsZero() {
		return "probes did not come back to ≤ 1.1× one replica's calls"
	}
	return fmt.Sprintf("probes back to ≤ 1.1× one replica's calls %.1f s after the restart", f.recovered.Sub(f.restarted).Seconds())
}
