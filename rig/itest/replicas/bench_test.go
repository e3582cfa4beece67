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

// BenchmarkReplicas runs four plugin processes, replicas of one data source, against one
// emulator (fleet.Large(200, 8), 6 h of history, live, CloudWatch's account limits) and
// one redis-server, and measures in one run:
//   - upstream calls of every replica opening the three dashboards at once and refreshing
//     them 60 s later, with the shared store and without it, against one replica alone;
//   - the account's 422 (rate) and 429 (concurrency) answers in each;
//   - the store paused, killed and restarted during the four replicas' cold loads: failed
//     panels, the notice, and when probe panels cost one replica's calls again.
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
		for _, sc := range []struct {
			name     string
			replicas int
			store    bool
		}{{"one replica", 1, false}, {"four, shared store", 4, true}, {"four, no store", 4, false}} {
			reps, stop := r.replicas(b, sc.replicas, r.dataSource(fmt.Sprintf("bench-%d-%d", n, len(rows)), sc.store, nil), 1)
			cold, refresh := coldAndRefresh(r, clientsOf(reps), dashes, refreshAfter, nil)
			stop()
			rows = append(rows, row{sc.name, cold, refresh})
			for _, e := range append(cold.errors(), refresh.errors()...) {
				fmt.Printf("  %s: %s\n", sc.name, e)
			}
			fmt.Printf("  %s done, load average %s\n", sc.name, loadAverage())
		}
		base := len(rows[0].cold.calls) + len(rows[0].refresh.calls)
		fmt.Printf("\n| replicas | cold load: calls, 422, 429 (time) | refresh at +60 s: calls, 422, 429 | calls vs one replica | failed panels | store notices |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, rw := range rows {
			cc, c422, c429 := rw.cold.answers()
			rc, r422, r429 := rw.refresh.answers()
			ratio := float64(cc+rc) / float64(max(base, 1))
			fmt.Printf("| %s | %d, %d, %d (%.1f s) | %d, %d, %d | %.2f× | %d | %d |\n", rw.name, cc, c422, c429, rw.cold.took.Seconds(), rc, r422, r429,
				ratio, rw.cold.failedPanels()+rw.refresh.failedPanels(), rw.cold.notices(unavailable)+rw.refresh.notices(unavailable))
		}
		shared, unshared := rows[1], rows[2]
		b.ReportMetric(float64(base), "calls-one-replica")
		b.ReportMetric(float64(len(shared.cold.calls)+len(shared.refresh.calls))/float64(max(base, 1)), "x-one-with-store")
		b.ReportMetric(float64(len(unshared.cold.calls)+len(unshared.refresh.calls))/float64(max(base, 1)), "x-one-without-store")
		for _, rw := range rows[1:] {
			_, c422, c429 := rw.cold.answers()
			_, r422, r429 := rw.refresh.answers()
			unit := "-store"
			if rw.name == unshared.name {
				unit = "-nostore"
			}
			b.ReportMetric(float64(c422+r422), "422"+unit)
			b.ReportMetric(float64(c429+r429), "429"+unit)
		}

		f := runFaults(b, r, fmt.Sprintf("faults-%d", n), dashes, 5*time.Second, 90*time.Second)
		reportFaults(b, f)
		fmt.Printf("load average %s at the end\n", loadAverage())
	}
}

// reportFaults prints a fault run's rounds and outcome and reports its metrics.
func reportFaults(b *testing.B, f faultRun) {
	fmt.Printf("\nstore faults during the four replicas' cold loads: paused %s–%s, killed %s, restarted %s (times since the load began)\n",
		f.paused.Sub(f.load.began).Round(100*time.Millisecond), f.resumed.Sub(f.load.began).Round(100*time.Millisecond),
		f.stopped.Sub(f.load.began).Round(100*time.Millisecond), f.restarted.Sub(f.load.began).Round(100*time.Millisecond))
	for _, r := range f.rounds {
		fmt.Printf("  probe round at %+6.1f s from the restart: %d panels, %d calls (%.2f×), %d failed, %d store notices\n",
			r.at.Sub(f.restarted).Seconds(), r.k, r.calls, r.ratio(), r.failed, r.unavailable)
	}
	calls, c422, c429 := f.load.answers()
	pf, pn := f.probeFailures()
	fmt.Printf("cold loads under faults: %d calls, %d × 422, %d × 429, %d failed panels (+%d probe panels), %d store notices (+%d on probes); %s\n",
		calls, c422, c429, f.load.failedPanels(), pf, f.load.notices(unavailable), pn, recoveryText(f))
	b.ReportMetric(float64(f.load.failedPanels()+pf), "failed-panels-faults")
	b.ReportMetric(float64(f.load.notices(unavailable)+pn), "notices-faults")
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
