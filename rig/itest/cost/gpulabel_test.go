package cost_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestDCGMWithoutGPULabel: next to the default fleet, an instance whose DCGM series lack
// the gpu label (one series per GPU, told apart by device only; two held by a copy of one
// IC, two free). Unfiltered, its GPUs are its series: its type has 4 GPUs per instance, its
// endpoint's spend is the whole instance and the IC's half of it. Filtered to that IC, the
// series read are the IC's only, so its spend and its type's GPUs are gaps naming the
// missing gpu label, not the whole instance.
func TestDCGMWithoutGPULabel(t *testing.T) {
	const typ, ep, ic, host, span = "ml.g6e.12xlarge", "nolabel-ep", "nolabel-ic", "i-nolabel", 30 * time.Minute
	st := dstest.Stack(t, stack.Options{Scenario: "healthy", End: stack.PinnedEnd})
	price := fixturePrices(t)["us-east-1"][typ]
	app := st.DB.Appender(context.Background())
	for ts := st.End.Add(-45 * time.Minute); !ts.After(st.End); ts = ts.Add(st.Step) {
		for gpu := range 4 {
			b := labels.NewBuilder(labels.FromStrings(labels.MetricName, sc.DCGMGPUUtil, sc.LabelAccount, "123456789012", sc.LabelEndpoint, ep,
				sc.LabelHostID, host, sc.LabelHostType, typ, sc.LabelGPUDevice, fmt.Sprintf("nvidia%d", gpu)))
			if gpu < 2 {
				b.Set(sc.LabelInferenceComp, ic).Set(sc.LabelContainerID, "c-nolabel")
			}
			if _, err := app.Append(0, b.Labels(), ts.UnixMilli(), 50); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	d := datasource(t, st, nil)
	find := func(rs []map[string]any, col, val string) []map[string]any {
		var out []map[string]any
		for _, r := range rs {
			if r[col] == val {
				out = append(out, r)
			}
		}
		return out
	}

	for _, tc := range []struct {
		name   string
		filter map[string]any
	}{{"unfiltered", nil}, {"filtered to " + ic, map[string]any{"inferenceComponent": ic}}} {
		t.Run(tc.name, func(t *testing.T) {
			query := func(view string) []map[string]any {
				m := map[string]any{"view": view}
				for k, v := range tc.filter {
					m[k] = v
				}
				return rows(t, costQuery(t, d, st.End, span, m))
			}
			types := find(query("prices"), "Instance type", typ)
			spend := find(query("spend"), "Endpoint", ep)
			if len(types) != 1 {
				t.Fatalf("%d rows of %s in the prices view, want 1", len(types), typ)
			}
			if tc.filter == nil {
				if got := types[0]["GPUs per instance"]; got != 4.0 {
					t.Errorf("%s: %v GPUs per instance, want its 4 series", typ, got)
				}
				whole, share := find(spend, "Inference component", "(whole endpoint)"), find(spend, "Inference component", ic)
				if len(whole) != 1 || len(share) != 1 {
					t.Fatalf("spend rows %v, want the endpoint's and the IC's", spend)
				}
				if got, want := whole[0]["Spend"].(float64), price*span.Hours(); !near(got, want) {
					t.Errorf("endpoint spend %g, want the instance's %g", got, want)
				}
				if got, want := share[0]["Spend"].(float64), price*span.Hours()/2; !near(got, want) {
					t.Errorf("IC spend %g, want half the instance's %g", got, want)
				}
				return
			}
			if got := types[0]["GPUs per instance"].(float64); !math.IsNaN(got) || !strings.Contains(types[0]["Price source"].(string), "none") {
				t.Errorf("filtered, %s has %v GPUs per instance (source %v), want a gap", typ, got, types[0]["Price source"])
			}
			if len(spend) != 1 || spend[0]["Inference component"] != ic {
				t.Fatalf("filtered spend rows %v, want the IC's", spend)
			}
			r := spend[0]
			if in, _ := r["Inputs"].(string); !math.IsNaN(r["Spend"].(float64)) || !strings.Contains(in, "lack the "+sc.LabelGPU+" label") {
				t.Errorf("filtered IC spend %v (inputs %q), want a gap naming the missing %s label", r["Spend"], in, sc.LabelGPU)
			}
		})
	}
}
