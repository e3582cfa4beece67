package diagnosis_test

import (
	"math"
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// classic writes a delta (per-minute count) classic metric for an endpoint.
func (d *fleetData) classic(metric, ep string, f func(int) float64) {
	d.float(lbls(metric, semconv.DimEndpointName, ep, semconv.DimVariantName, "AllTraffic", semconv.LabelTemporality, "delta"), f)
}

func TestErrorRule(t *testing.T) {
	spike := func(k, n int, v float64) func(int) float64 {
		return func(i int) float64 {
			if i >= k && i < k+n {
				return v
			}
			return 0
		}
	}
	cases := []struct {
		name    string
		metric  string
		errs    func(int) float64
		invocs  func(int) float64
		want    Severity
		wantHit bool
		cause   string
	}{
		{"5xx spike", semconv.Invocation5XXErrors, spike(120, 10, 30), constant(100), Critical, true, "5xx"},
		{"model errors spike", semconv.InvocationModelErrors, spike(60, 5, 20), constant(100), Critical, true, "model"},
		{"4xx spike is a warning", semconv.Invocation4XXErrors, spike(60, 5, 50), constant(100), Warning, true, "4xx"},
		{"small 5xx spike is a warning", semconv.Invocation5XXErrors, spike(60, 5, 15), constant(1000), Warning, true, "5xx"},
		{"steady low error rate", semconv.Invocation5XXErrors, constant(0.5), constant(100), 0, false, ""},
		// A big fleet's independent errors: about 3 a minute out of 800 invocations, and the
		// worst minute of three hours has 11 (1.4%, which the ratio alone called a spike).
		{"a handful of errors across a big fleet", semconv.Invocation4XXErrors, func(i int) float64 {
			if i == 100 {
				return 11
			}
			return float64(2 + i%3)
		}, constant(800), 0, false, ""},
		{"one error on a quiet endpoint", semconv.Invocation5XXErrors, spike(60, 1, 1), constant(40), 0, false, ""},
		{"errors without invocations", semconv.Invocation5XXErrors, spike(60, 5, 20), constant(0), 0, false, ""},
		{"NaN counts", semconv.Invocation5XXErrors, constant(math.NaN()), constant(100), 0, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			d.classic(semconv.Invocations, "ep-a", c.invocs)
			d.classic(c.metric, "ep-a", c.errs)
			d.classic(semconv.Invocations, "ep-b", constant(100)) // healthy neighbour
			r := diagnose(t, d.querier(), Scope{}, "error-spike")
			if !c.wantHit {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 {
				t.Fatalf("want one finding, got%s", describe(r.Findings))
			}
			f := r.Findings[0]
			if f.Severity != c.want || f.Target != (Target{Level: LevelEndpoint, Name: "ep-a", Endpoint: "ep-a"}) || !strings.Contains(f.Cause, c.cause) {
				t.Fatalf("got%s", describe(r.Findings))
			}
			// One request for the traffic; a 4xx spike is judged with the engine queue too,
			// which the KV and queueing rules send anyway.
			want := 1
			if c.cause == "4xx" {
				want = 2
			}
			if r.Requests != want {
				t.Fatalf("the error rule must batch its signals in %d request(s), made %d", want, r.Requests)
			}
		})
	}
}

// TestRejectionsAreEvidence: a 4xx spike while requests wait in the saturated engine is the
// engine turning requests away, evidence of the KV finding, not a finding ranked above it; the
// same spike with an idle engine stays the callers' warning.
func TestRejectionsAreEvidence(t *testing.T) {
	for _, c := range []struct {
		name      string
		saturated bool
	}{{"saturated engine", true}, {"idle engine", false}} {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			d.classic(semconv.Invocations, "ep-a", constant(100))
			d.classic(semconv.Invocation4XXErrors, "ep-a", stepAt(170, 0, 40))
			kv, waiting := constant(0.2), constant(0)
			if c.saturated {
				kv, waiting = stepAt(170, 0.2, 0.97), stepAt(170, 0, 40)
			}
			l := engLabels("ep-a", "ic-a", "i-1", "az-1")
			d.float(lbls(semconv.VLLMKVCacheUsage, l...), kv)
			d.float(lbls(semconv.VLLMWaiting, l...), waiting)
			r := diagnose(t, d.querier(), Scope{}, "kv-cache-saturation", "error-spike")
			if len(r.Findings) == 0 {
				t.Fatal("no finding")
			}
			top := r.Findings[0]
			if !c.saturated {
				if top.Rule != "error-spike" || top.Severity != Warning {
					t.Fatalf("an idle engine's 4xx spike is the callers' warning, got%s", describe(r.Findings))
				}
				return
			}
			if top.Rule != "kv-cache-saturation" || len(r.Findings) != 1 {
				t.Fatalf("want the KV finding alone, got%s", describe(r.Findings))
			}
			if ev := top.Evidence[len(top.Evidence)-1]; !strings.Contains(ev.What, "4xx") || !strings.Contains(ev.Value, "40 of 100") {
				t.Fatalf("the 4xx spike is not the KV finding's evidence: %+v", top.Evidence)
			}
		})
	}
}

func TestErrorRuleICScope(t *testing.T) {
	d := newData(t)
	ic := func(metric string, f func(int) float64) {
		d.float(lbls(metric, semconv.DimInferenceComponentName, "ic-a", semconv.LabelTemporality, "delta"), f)
	}
	ic(semconv.InvocationsForIC, constant(50))
	ic(semconv.Invocation5XXErrorsForIC, stepAt(150, 0, 10))
	r := diagnose(t, d.querier(), Scope{Endpoint: "ep-a", InferenceComponent: "ic-a"}, "error-spike")
	if len(r.Findings) != 1 || r.Findings[0].Target.Level != LevelIC || r.Findings[0].Target.Name != "ic-a" || r.Findings[0].Severity != Critical {
		t.Fatalf("want a critical 5xx finding on ic-a, got%s", describe(r.Findings))
	}
}
