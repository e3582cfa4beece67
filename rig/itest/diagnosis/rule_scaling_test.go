package diagnosis_test

import (
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// burst is b for n minutes from minute k, a outside them.
func burst(k, n int, a, b float64) func(int) float64 {
	return func(i int) float64 {
		if i >= k && i < k+n {
			return b
		}
		return a
	}
}

func TestScalingRule(t *testing.T) {
	cases := []struct {
		name    string
		load    func(int) float64
		waiting func(int) float64
		outs    map[int]float64 // minute -> e2e_duration (s)
		target  float64         // configured policy target; 0 infers from the load
		cause   string
		sev     Severity
	}{
		{"load triples, no scale-out", stepAt(100, 6, 20), stepAt(100, 0, 12), nil, 0, "did not fire", Warning},
		{"over a known target, no scale-out", constant(12), constant(0), nil, 8, "did not fire", Critical},
		{"overload answered quickly", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{103: 240}, 0, "", 0},
		{"overload of a known target answered late", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{140: 300}, 8, "Slow scaling", Warning},
		{"late answer without a known target is not judged", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{140: 300}, 0, "", 0},
		{"a slow scale-out on its own", constant(4), constant(0), map[int]float64{50: 1500}, 0, "Slow scaling", Warning},
		{"steady load", constant(12), constant(0), nil, 0, "", 0},
		// Far over the target, a burst still going on at the end is named within SustainFast
		// (the fast window); one that has ended without a scale-out is a burst.
		{"short burst over a known target, ended", burst(170, 5, 6, 20), burst(170, 5, 0, 12), nil, 8, "", 0},
		{"far over a known target for the fast window", stepAt(175, 6, 20), stepAt(175, 0, 12), nil, 8, "did not fire", Critical},
		{"scale-out before the overload does not count", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{20: 200}, 8, "did not fire", Critical},
		{"20 minutes is a burst, not a failure to scale", stepAt(160, 6, 20), stepAt(160, 0, 12), nil, 0, "", 0},
		{"idle IC", constant(0), constant(0), nil, 0, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), c.load)
			d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-other"), constant(30)) // another endpoint's IC
			d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "ic-a", "i-1", "az-1")...), constant(50))
			d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-b", "ic-other", "i-2", "az-1")...), constant(50))
			d.float(lbls(semconv.VLLMWaiting, engLabels("ep-a", "ic-a", "i-1", "az-1")...), c.waiting)
			if c.outs != nil {
				d.event(lbls(semconv.ScalingE2EDuration, semconv.LabelEndpoint, "ep-a", semconv.LabelInferenceComp, "ic-a", semconv.LabelScalingDirection, semconv.ScaleOut), c.outs)
			}
			cfg := DefaultConfig()
			cfg.Rules, cfg.ScalingTarget = []string{"scaling"}, c.target
			r := diagnoseWith(t, d.querier(), Scope{Endpoint: "ep-a"}, cfg)
			if c.cause == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Cause, c.cause) || r.Findings[0].Severity != c.sev ||
				r.Findings[0].Target != (Target{Level: LevelIC, Name: "ic-a", Endpoint: "ep-a", InferenceComponent: "ic-a"}) {
				t.Fatalf("want %s %q on ic-a, got%s", c.sev, c.cause, describe(r.Findings))
			}
		})
	}
}

func TestScalingTargetPerIC(t *testing.T) {
	d := newData(t)
	d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), constant(12))
	q := d.querier()
	cfg := DefaultConfig()
	cfg.Rules, cfg.ScalingTarget = []string{"scaling"}, 8
	if r := diagnoseWith(t, q, Scope{}, cfg); len(r.Findings) != 1 {
		t.Fatalf("12 per copy over the target 8 must fire, got%s", describe(r.Findings))
	}
	cfg.ScalingTargets = map[string]float64{"ic-a": 14}
	if r := diagnoseWith(t, q, Scope{}, cfg); len(r.Findings) != 0 {
		t.Fatalf("12 per copy under its own target 14 must not fire, got%s", describe(r.Findings))
	}
}

// Durations count the time covered, not one step more ("3h1m" on a 3-hour range).
func TestScalingDurationFitsTheRange(t *testing.T) {
	d := newData(t)
	d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), constant(12))
	d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "ic-a", "i-1", "az-1")...), constant(50))
	cfg := DefaultConfig()
	cfg.Rules, cfg.ScalingTarget = []string{"scaling"}, 8
	r := diagnoseWith(t, d.querier(), Scope{}, cfg)
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Summary, "for 3h (") {
		t.Fatalf("want one finding lasting the whole 3h range, got%s", describe(r.Findings))
	}
}
