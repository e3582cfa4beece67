package simulator

import (
	"fmt"
	"maps"
	"math"
	"testing"

	"github.com/prometheus/prometheus/tsdb"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// gpu-degrade: exactly one GPU runs hot and thermally throttled with a double-bit ECC error
// (XID 48) at the end of the history; in healthy no GPU does, and the copy on the degraded GPU
// streams tokens more slowly than its siblings.
func TestGPUDegrade(t *testing.T) {
	thermal := sc.ThrottleHWThermal | sc.ThrottleSWThermal
	for _, c := range []struct {
		scenario string
		want     int
	}{{"healthy", 0}, {"gpu-degrade", 1}} {
		db := backfilled(t, c.scenario, 3)
		counts := map[string]string{
			"above the throttle temperature":       fmt.Sprintf("%s >= %d", sc.DCGMGPUTemp, throttleAtC),
			"thermal throttle bits":                fmt.Sprintf("%s == %d", sc.DCGMThrottleReasons, thermal),
			"XID 48":                               fmt.Sprintf("%s == %d", sc.DCGMXIDErrors, xidDoubleBit),
			"double-bit ECC":                       fmt.Sprintf("%s > 0", sc.DCGMECCDBEVolatile),
			"corrected ECC climbing":               fmt.Sprintf("delta(%s[30m]) > 0", sc.DCGMECCSBEVolatile),
			"busy with the clock below 60% of max": fmt.Sprintf("%s < %d and on (UUID) %s > 0", sc.DCGMSMClock, smClockMaxMHz*6/10, sc.DCGMGPUUtil),
		}
		for what, expr := range counts {
			if got := len(query(t, db, expr, sc.LabelGPUUUID)); got != c.want {
				t.Errorf("%s: %d GPUs %s, want %d", c.scenario, got, what, c.want)
			}
		}
		// Every GPU reports every field the GPU health row reads, free or owned.
		gpus := len(query(t, db, sc.DCGMGPUUtil, sc.LabelGPUUUID))
		for _, m := range []string{sc.DCGMPowerLimit, sc.DCGMSMOccupancy, sc.DCGMPCIeRXBytes, sc.DCGMPCIeTXBytes, sc.DCGMECCSBEVolatile} {
			if n := len(query(t, db, m, sc.LabelGPUUUID)); n != gpus {
				t.Errorf("%s: %s on %d GPUs of %d", c.scenario, m, n, gpus)
			}
		}
		if over := query(t, db, sc.DCGMPowerUsage+" > on (UUID) "+sc.DCGMPowerLimit, sc.LabelGPUUUID); len(over) > 0 {
			t.Errorf("%s: power above the limit on %v", c.scenario, over)
		}
	}
	// The degraded copy's inter-token latency stands out among the copies of its IC.
	db := backfilled(t, "gpu-degrade", 3)
	hotCopy := query(t, db, fmt.Sprintf(`%s >= %d`, sc.DCGMGPUTemp, throttleAtC), sc.LabelContainerID)
	if len(hotCopy) != 1 {
		t.Fatalf("hot GPU carries no copy label: %v", hotCopy)
	}
	itl := query(t, db, `histogram_avg(sum by ("aws.sagemaker.container.id") (rate({"vllm:inter_token_latency_seconds"}[10m]) or rate({"sglang:inter_token_latency_seconds"}[10m])))`, sc.LabelContainerID)
	for id := range hotCopy {
		slow, ok := itl[id]
		if !ok {
			t.Fatalf("no ITL for the degraded copy %s", id)
		}
		fastest := math.Inf(1)
		for other, v := range itl {
			if other != id {
				fastest = math.Min(fastest, v)
			}
		}
		if !(slow > 1.5*fastest) {
			t.Errorf("degraded copy ITL %g s, fastest other copy %g s: want it clearly slower", slow, fastest)
		}
	}
}

// The per-copy and per-instance vended variants add up to the endpoint totals, so panels can
// narrow to a copy or an instance and still agree with the endpoint view.
func TestVendedVariantsAddUp(t *testing.T) {
	db := backfilled(t, "healthy", 2)
	for _, c := range []struct{ parts, total string }{
		{`sum(sum_over_time(InvocationsForIcByInstanceIdByContainerId{EndpointName="chat-ic"}[1h]))`, `sum(sum_over_time(Invocations{EndpointName="chat-ic"}[1h]))`},
		{`sum(sum_over_time(Invocation5XXErrorsForIcByInstanceIdByContainerId{EndpointName="chat-ic"}[1h]))`, `sum(sum_over_time(Invocation5XXErrors{EndpointName="chat-ic"}[1h]))`},
		{`sum(sum_over_time(InvocationModelErrorsByInstanceId[1h]))`, `sum(sum_over_time(InvocationModelErrors[1h]))`},
		{`histogram_count(sum(sum_over_time(ModelLatencyForIcByInstanceIdByContainerId{EndpointName="chat-ic"}[1h])))`, `histogram_count(sum(sum_over_time(ModelLatency{EndpointName="chat-ic"}[1h])))`},
		{`histogram_count(sum(sum_over_time(ModelLatencyByInstanceId{EndpointName="summarize"}[1h])))`, `histogram_count(sum(sum_over_time(ModelLatency{EndpointName="summarize"}[1h])))`},
		{`histogram_count(sum(sum_over_time(FirstChunkModelLatencyByAzByInstanceType[1h])))`, `histogram_count(sum(sum_over_time(FirstChunkModelLatency[1h])))`},
	} {
		p, tot := one(t, db, c.parts), one(t, db, c.total)
		if tot <= 0 || p != tot {
			t.Errorf("%s = %g, want %s = %g", c.parts, p, c.total, tot)
		}
	}
}

// TestRebalanceMovesCopies: with rebalance_minutes, copies of ICs with idle slots leave
// their GPUs and new ones start elsewhere over the history, on other instances too, while
// each IC keeps its number of copies and every instance its GPUs; without it no copy moves.
func TestRebalanceMovesCopies(t *testing.T) {
	held := func(db *tsdb.DB, window string) map[string]float64 {
		return query(t, db, `count by ("`+sc.LabelInferenceComp+`") (count by ("`+sc.LabelInferenceComp+`", "`+sc.LabelContainerID+`", "`+sc.LabelHostID+`") (last_over_time(`+
			sc.DCGMGPUUtil+`{"`+sc.LabelInferenceComp+`"!=""}[`+window+`])))`, sc.LabelInferenceComp)
	}
	still := backfilled(t, "healthy", 2)
	f := fleet.Default()
	f.RebalanceMinutes = 10
	moving := backfillFleet(t, f, "healthy", 2)
	before, now, stayed := held(moving, "2h"), held(moving, "1m"), held(still, "1m")
	moved := 0
	for ic, n := range now {
		if n != stayed[ic] {
			t.Errorf("%s holds GPUs with %v copies, %v without rebalancing", ic, n, stayed[ic])
		}
		if before[ic] > n {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no IC's copies moved in 2 h: over the history %v, now %v", before, now)
	}
	if s := held(still, "2h"); len(s) == 0 || !maps.Equal(s, stayed) {
		t.Errorf("without rebalancing the copies moved: over the history %v, now %v", s, stayed)
	}
	gpus := query(t, moving, `count by ("`+sc.LabelHostID+`") (count by ("`+sc.LabelHostID+`", gpu) (last_over_time(`+sc.DCGMGPUUtil+`[1m])))`, sc.LabelHostID)
	want := map[string]float64{}
	for _, e := range f.Endpoints {
		for _, g := range e.Instances {
			for range g.Count {
				want[fmt.Sprint(g.GPUs)]++
			}
		}
	}
	got := map[string]float64{}
	for _, n := range gpus {
		got[fmt.Sprint(n)]++
	}
	if !maps.Equal(got, want) {
		t.Errorf("instances by GPUs %v, the fleet file's %v", got, want)
	}
}
