package diagnosis_test

import (
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestQueueingRule(t *testing.T) {
	usBounds := []float64{1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7}
	cases := []struct {
		name       string
		ttft       func(int) float64 // seconds
		kv         float64
		modelUS    func(int) float64
		wantSev    Severity
		wantSilent bool
	}{
		{name: "TTFT up, latencies flat, requests wait", ttft: stepAt(120, 0.3, 6), kv: 0.5, modelUS: constant(3e5), wantSev: Critical},
		{name: "TTFT doubles below the high mark", ttft: stepAt(120, 0.3, 1.2), kv: 0.5, modelUS: constant(3e5), wantSev: Warning},
		{name: "model latency rose too: not the engine queue", ttft: stepAt(120, 0.3, 6), kv: 0.5, modelUS: stepAt(120, 3e5, 3e6), wantSilent: true},
		{name: "KV saturated: the KV rule names the cause", ttft: stepAt(120, 0.3, 6), kv: 0.97, modelUS: constant(3e5), wantSilent: true},
		{name: "flat TTFT", ttft: constant(0.3), kv: 0.5, modelUS: constant(3e5), wantSilent: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			for _, h := range []string{"i-1", "i-2"} {
				l := engLabels("ep-a", "", h, "az-1")
				d.hist(lbls(semconv.VLLMTTFT, l...), latencyBounds, constant(60), c.ttft)
				d.float(lbls(semconv.VLLMKVCacheUsage, l...), constant(c.kv))
				d.float(lbls(semconv.VLLMWaiting, l...), func(i int) float64 { return c.ttft(i) * 2 })
			}
			dims := []string{semconv.DimEndpointName, "ep-a", semconv.DimVariantName, "AllTraffic"}
			d.deltaHist(lbls(semconv.ModelLatency, dims...), usBounds, constant(120), c.modelUS)
			d.deltaHist(lbls(semconv.OverheadLatency, dims...), usBounds, constant(120), constant(4e3))
			r := diagnose(t, d.querier(), Scope{}, "engine-queueing")
			if c.wantSilent {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 || r.Findings[0].Severity != c.wantSev || r.Findings[0].Target.Name != "ep-a" {
				t.Fatalf("want %s on ep-a, got%s", c.wantSev, describe(r.Findings))
			}
			if len(r.Findings[0].Evidence) < 5 {
				t.Fatalf("evidence must show TTFT, waiting, KV and both latencies: %+v", r.Findings[0].Evidence)
			}
		})
	}
}

// TestQueueingICFallsBackToEndpointLatency: without per-IC latency series the IC is judged on
// its endpoint's ModelLatency, so a slower model is not called engine queueing.
func TestQueueingICFallsBackToEndpointLatency(t *testing.T) {
	usBounds := []float64{1e4, 1e5, 1e6, 1e7}
	for _, c := range []struct {
		name    string
		modelUS func(int) float64
		want    int
	}{{"model latency flat", constant(3e5), 1}, {"model latency rose", stepAt(120, 3e5, 5e6), 0}} {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			l := engLabels("ep-a", "ic-a", "i-1", "az-1")
			d.hist(lbls(semconv.VLLMTTFT, l...), latencyBounds, constant(60), stepAt(120, 0.3, 6))
			d.float(lbls(semconv.VLLMWaiting, l...), stepAt(120, 0, 8))
			dims := []string{semconv.DimEndpointName, "ep-a", semconv.DimVariantName, "AllTraffic"}
			d.deltaHist(lbls(semconv.ModelLatency, dims...), usBounds, constant(120), c.modelUS)
			r := diagnose(t, d.querier(), Scope{}, "engine-queueing")
			if len(r.Findings) != c.want {
				t.Fatalf("want %d findings, got%s", c.want, describe(r.Findings))
			}
		})
	}
}
