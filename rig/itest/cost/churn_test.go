package cost_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// gpuAt is one GPU of one instance.
type gpuAt struct{ host, gpu string }

// holderOf is who wrote a GPU's sample: its endpoint, instance type, IC and copy ("" = free).
type holderOf struct{ endpoint, typ, ic, copy string }

// rawHolders reads the stack's stored DCGM_FI_DEV_GPU_UTIL samples straight from its TSDB
// (no PromQL, no lookback) and gives, per step t of [from, to), each GPU's holder: the
// series that wrote that GPU's newest sample in (t-step, t].
func rawHolders(t *testing.T, st *stack.Stack, from, to time.Time, step time.Duration) map[int64]map[gpuAt]holderOf {
	t.Helper()
	q, err := st.DB.Querier(from.Add(-step).UnixMilli(), to.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	type pick struct {
		ts int64
		h  holderOf
	}
	newest := map[int64]map[gpuAt]pick{}
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, sc.DCGMGPUUtil))
	for set.Next() {
		ls := set.At().Labels()
		k := gpuAt{ls.Get(sc.LabelHostID), ls.Get(sc.LabelGPU)}
		h := holderOf{ls.Get(sc.LabelEndpoint), ls.Get(sc.LabelHostType), ls.Get(sc.LabelInferenceComp), ls.Get(sc.LabelContainerID)}
		it := set.At().Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, _ := it.At()
			at := stepOf(ts, from.UnixMilli(), step.Milliseconds())
			if at < from.UnixMilli() || at >= to.UnixMilli() {
				continue
			}
			if newest[at] == nil {
				newest[at] = map[gpuAt]pick{}
			}
			if p, ok := newest[at][k]; !ok || ts > p.ts {
				newest[at][k] = pick{ts, h}
			}
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	out := map[int64]map[gpuAt]holderOf{}
	for at, gpus := range newest {
		out[at] = map[gpuAt]holderOf{}
		for k, p := range gpus {
			out[at][k] = p.h
		}
	}
	return out
}

// stopOne deletes every sample of one of st's instances (picked by seed) from at on, as if
// it stopped then, and names it.
func stopOne(t *testing.T, st *stack.Stack, seed uint64, at time.Time) string {
	t.Helper()
	q, err := st.DB.Querier(at.Add(-time.Hour).UnixMilli(), at.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	hosts, _, err := q.LabelValues(context.Background(), sc.LabelHostID, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, sc.DCGMGPUUtil))
	q.Close()
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no instance to stop: %v", err)
	}
	host := hosts[int(seed)%len(hosts)]
	// Up to just before End, not past it: a tombstone reaching past a querier's end trips
	// tombstones.Intervals.Add (index out of range) in prometheus v0.316 when the querier trims
	// both ends of a chunk. The ranges end at End, so a sample there is never counted.
	if err := st.DB.Delete(context.Background(), at.UnixMilli(), st.End.UnixMilli()-1, labels.MustNewMatcher(labels.MatchEqual, sc.LabelHostID, host)); err != nil {
		t.Fatal(err)
	}
	return host
}

// stepOf is the time t of the grid from + k·step whose (t-step, t] holds ts: k is
// ceil((ts-from)/step), by floor division (Go's / truncates toward zero, which would put a
// sample at from-step at from).
func stepOf(ts, from, step int64) int64 {
	a := ts - from + step - 1
	k := a / step
	if a%step != 0 && a < 0 {
		k--
	}
	return from + k*step
}

func TestStepOf(t *testing.T) {
	const from, step = 600_000, 60_000
	for _, c := range []struct{ ts, want int64 }{
		{from, from}, {from + 1, from + step}, {from - 1, from}, {from - step + 1, from},
		{from - step, from - step}, {from - step - 1, from - step}, {from - 2*step, from - 2*step}, {from + step, from + step},
	} {
		if got := stepOf(c.ts, from, step); got != c.want {
			t.Errorf("stepOf(from%+d ms) = from%+d ms, want from%+d ms", c.ts-from, got-from, c.want-from)
		}
	}
}

// TestCostUnderCopyChurn: on generated fleets whose copies scale in and out during the
// range (seeds 1-16, the even ones also rebalancing a copy every few minutes; a GPU
// changing holder leaves the old holder's series visible for the lookback), the prices view's GPUs per instance are the fleet file's; each IC's
// spend is its GPUs' shares of their instances worked out from the raw samples (distinct
// GPUs per instance, each GPU to the holder that wrote its sample); each endpoint's GPU-hours
// are its distinct GPUs × hours; and filtered to one IC, the IC's spend, instance-hours and
// cost per output token equal its row of the unfiltered query.
func TestCostUnderCopyChurn(t *testing.T) {
	prices := fixturePrices(t)
	const span = 2 * time.Hour
	handovers, filtered, churned := 0, 0, 0
	for seed := uint64(1); seed <= 16; seed++ {
		f, err := fleet.Generate(rand.New(rand.NewPCG(seed, 32)), 12)
		if err != nil {
			t.Fatal(err)
		}
		if seed%2 == 0 {
			f.RebalanceMinutes = 5 + int(seed%7) // copies also move between instances
		}
		before := handovers
		st := dstest.Stack(t, stack.Options{Fleet: f, Seed: int64(seed), History: 3 * time.Hour, End: stack.PinnedEnd})
		from, to := st.End.Add(-span), st.End
		// One instance stops mid-range, off the step grid (its stored samples end there): it
		// must not be billed for the lookback after its last sample.
		stopped := stopOne(t, st, seed, from.Add(span/2+20*time.Second))
		d := datasource(t, st, nil)
		raw := rawHolders(t, st, from, to, st.Step)

		// By hand from the raw samples.
		gpusOf := map[string]int{} // type → GPUs per instance in the fleet file
		for _, e := range f.Endpoints {
			for _, g := range e.Instances {
				gpusOf[g.Type] = g.GPUs
			}
		}
		h := st.Step.Hours()
		icSpend, epGPUHours := map[string]float64{}, map[string]float64{}
		prev := map[gpuAt]holderOf{}
		for at := from.UnixMilli(); at < to.UnixMilli(); at += st.Step.Milliseconds() {
			perHost := map[string]int{}
			for k := range raw[at] {
				perHost[k.host]++
			}
			for k, ho := range raw[at] {
				if perHost[k.host] != gpusOf[ho.typ] {
					t.Fatalf("seed %d: %s shows %d distinct GPUs at %s, the fleet file gives %s %d", seed, k.host, perHost[k.host], time.UnixMilli(at).UTC(), ho.typ, gpusOf[ho.typ])
				}
				epGPUHours[ho.endpoint] += h
				if ho.ic != "" {
					icSpend[ho.ic] += h / float64(perHost[k.host]) * prices[f.Region][ho.typ]
				}
				if p, ok := prev[k]; ok && p != ho {
					handovers++
				}
				prev[k] = ho
			}
		}

		for _, r := range rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "prices"})) {
			typ := r["Instance type"].(string)
			if r["GPUs per instance"] != float64(gpusOf[typ]) {
				t.Errorf("seed %d: %s has %v GPUs per instance, the fleet file %d", seed, typ, r["GPUs per instance"], gpusOf[typ])
			}
			if want := prices[f.Region][typ] / float64(gpusOf[typ]); !near(r["Price per GPU-hour"].(float64), want) {
				t.Errorf("seed %d: %s at %v per GPU-hour, want %g", seed, typ, r["Price per GPU-hour"], want)
			}
		}

		spendRows := rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "spend"}))
		gotIC, gotGPUHours := map[string]float64{}, map[string]float64{}
		for _, r := range spendRows {
			ep, ic := r["Endpoint"].(string), r["Inference component"].(string)
			if ic == "(whole endpoint)" {
				gotGPUHours[ep] += r["GPU-hours"].(float64)
			} else if ic != "(single model)" {
				gotIC[ic] += r["Spend"].(float64)
			}
		}
		for ep, want := range epGPUHours {
			if !near(gotGPUHours[ep], want) {
				t.Errorf("seed %d endpoint %s: %g GPU-hours, from the raw samples %g", seed, ep, gotGPUHours[ep], want)
			}
		}
		for ic, want := range icSpend {
			if !near(gotIC[ic], want) {
				t.Errorf("seed %d IC %s: spend %g, from the raw samples %g", seed, ic, gotIC[ic], want)
			}
		}

		tokens := map[string]map[string]any{}
		for _, r := range rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "tokens"})) {
			tokens[r["Inference component"].(string)] = r
		}
		for ic := range icSpend {
			got := rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "spend", "inferenceComponent": ic}))
			sum := 0.0
			for _, r := range got {
				if r["Inference component"] != ic {
					t.Errorf("seed %d: filtered to %s, a row of %v", seed, ic, r["Inference component"])
				}
				sum += r["Spend"].(float64)
			}
			if !near(sum, gotIC[ic]) {
				t.Errorf("seed %d IC %s: filtered spend %g, its unfiltered row %g", seed, ic, sum, gotIC[ic])
			}
			tok := rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "tokens", "inferenceComponent": ic}))
			if len(tok) != 1 {
				t.Fatalf("seed %d IC %s: %d token rows filtered, want 1", seed, ic, len(tok))
			}
			for _, col := range []string{"Instance-hours", "Spend", "Output tokens", "USD per 1M output tokens"} {
				a, b := tok[0][col].(float64), tokens[ic][col].(float64)
				if !near(a, b) && !(math.IsNaN(a) && math.IsNaN(b)) {
					t.Errorf("seed %d IC %s: filtered %s %g, unfiltered %g", seed, ic, col, a, b)
				}
			}
			filtered++
		}
		if handovers > before {
			churned++
		}
		t.Logf("seed %d (%s): %d GPU handovers, %s stopped; IC spend from the raw samples %v", seed, f.Region, handovers-before, stopped, icSpend)
	}
	if churned < 4 {
		t.Fatalf("GPUs changed holder in the range of %d seeds only: the fleets hardly churn, the test checks little", churned)
	}
	if filtered == 0 {
		t.Fatal("no IC in any seed: the filter is not checked")
	}
	t.Logf("%d GPU handovers in %d seeds, %d ICs filtered", handovers, churned, filtered)
}
