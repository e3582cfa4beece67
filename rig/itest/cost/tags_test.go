package cost_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/cost"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestCostByTag: on a generated fleet with hostile tags (dots, spaces, UTF-8, quotes), each
// view grouped by Team sums to the ungrouped view's total, and the spend view's rows equal
// the ungrouped rows summed by the Team the fleet file gives their resource (an IC's own
// tag, else its endpoint's, else untagged): the join is checked against the file, not the
// plugin's lookup.
func TestCostByTag(t *testing.T) {
	most := 0
	for seed := uint64(1); seed <= 7; seed++ {
		most = max(most, costByTag(t, seed))
	}
	if most < 3 {
		t.Errorf("at most %d Team rows in any fleet: the seeds do not exercise grouping", most)
	}
}

// costByTag checks one generated fleet and returns how many Team rows its spend view has.
func costByTag(t *testing.T, seed uint64) int {
	const span = 2 * time.Hour
	base, err := fleet.Generate(rand.New(rand.NewPCG(seed, 28)), 10)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.WithTags(base, rand.New(rand.NewPCG(seed, 35)))
	if err != nil {
		t.Fatal(err)
	}
	st := dstest.Stack(t, stack.Options{Fleet: f, Seed: int64(seed)})
	d := datasource(t, st, nil)
	team := map[string]string{} // endpoint or IC name → its Team, "" untagged
	for _, e := range f.Endpoints {
		team[e.Name] = e.Tags[fleet.TeamKey]
		for _, ic := range e.InferenceComponents {
			team[ic.Name] = ic.Tags[fleet.TeamKey]
		}
	}
	teamOf := func(endpoint, ic string) string {
		if v := team[ic]; v != "" {
			return v
		}
		if v := team[endpoint]; v != "" {
			return v
		}
		return cost.Untagged
	}
	query := func(view string, group bool) []map[string]any {
		m := map[string]any{"view": view}
		if group {
			m["groupByTag"] = fleet.TeamKey
		}
		return rows(t, costQuery(t, d, st.End, span, m))
	}
	// A DJL copy's tokens are unknown (NaN): the grouped rows sum the counted ones.
	sum := func(rs []map[string]any, col string) (total float64) {
		for _, r := range rs {
			if v := r[col].(float64); !math.IsNaN(v) {
				total += v
			}
		}
		return total
	}
	for _, tc := range []struct{ view, col string }{{"spend", "Spend"}, {"spend", "Idle spend"}, {"idle", "Idle spend"}, {"tokens", "Spend"}, {"tokens", "Output tokens"}} {
		flat, grouped := query(tc.view, false), query(tc.view, true)
		if tc.view == "spend" {
			// The copies' shares are part of their endpoint's row.
			flat = slices.DeleteFunc(flat, func(r map[string]any) bool { return r["Inference component"] != "(whole endpoint)" })
		}
		total := sum(flat, tc.col)
		if got := sum(grouped, tc.col); !near(got, total) || tc.col == "Spend" && total == 0 {
			t.Errorf("seed %d %s view, %s: by Team %g, ungrouped %g", seed, tc.view, tc.col, got, total)
		}
		t.Logf("seed %d %s view, %s: %d Team rows sum to %g, ungrouped %g", seed, tc.view, tc.col, len(grouped), sum(grouped, tc.col), total)
	}

	want := map[string]float64{}
	for _, r := range query("spend", false) {
		ep, ic := r["Endpoint"].(string), r["Inference component"].(string)
		switch ic {
		case "(whole endpoint)":
			want[teamOf(ep, "")] += r["Idle spend"].(float64)
		case "(single model)":
			want[teamOf(ep, "")] += r["Spend"].(float64)
		default:
			want[teamOf(ep, ic)] += r["Spend"].(float64)
		}
	}
	got := map[string]float64{}
	for _, r := range query("spend", true) {
		got[r[fleet.TeamKey].(string)] = r["Spend"].(float64)
	}
	if len(got) != len(want) {
		t.Errorf("seed %d: Team rows %v, from the fleet file %v", seed, got, want)
	}
	for v, w := range want {
		if !near(got[v], w) {
			t.Errorf("seed %d Team %q: spend %g, from the fleet file's tags %g", seed, v, got[v], w)
		}
	}
	return len(got)
}
