package dashboards_test

import (
	"testing"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// The SLOs row (Performance 50: TTFT and ITL attainment and budget per endpoint/IC; 51:
// availability per endpoint) against the emulator over the dashboards' six hours: met with
// budget to spare on the healthy fleet, missed where a scenario hurts TTFT (engine queueing,
// the last 90 minutes) or availability (a model crash, the last 60), and only there.
func TestSLORow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	targets := allTargets(t)
	latency, avail := targets["performance/50"], targets["performance/51"]
	if len(latency) != 4 || len(avail) != 2 {
		t.Fatalf("SLO tables have %d and %d targets, want 4 and 2", len(latency), len(avail))
	}
	healthy := startFleet(t, "healthy")
	for ref, dt := range latency {
		r := healthy.run(t, dt, nil)
		if len(r) == 0 {
			t.Errorf("latency SLO %s: no rows on the healthy fleet", ref)
		}
		for _, s := range r {
			attainment := ref == "A" || ref == "C"
			if attainment && s.last < builder.SLOLatencyObjective || !attainment && !(s.last > 0 && s.last <= 1) {
				t.Errorf("healthy latency SLO %s of %s: %g", ref, s.labels[sc.LabelInferenceComp], s.last)
			}
		}
	}
	for ref, dt := range avail {
		for ep, v := range healthy.run(t, dt, nil).by(sc.LabelEndpoint) {
			if ref == "A" && v < builder.SLOErrorObjective || ref == "B" && !(v > 0 && v <= 1) {
				t.Errorf("healthy availability %s of %s: %g", ref, ep, v)
			}
		}
	}

	queueing := startFleet(t, "engine-queueing")
	att, budget := queueing.run(t, latency["A"], nil).by(sc.LabelInferenceComp), queueing.run(t, latency["B"], nil).by(sc.LabelInferenceComp)
	if !(att["chat-qwen-7b"] < builder.SLOLatencyObjective) || !(budget["chat-qwen-7b"] < 0) {
		t.Errorf("engine-queueing: TTFT attainment %g and budget %g of chat-qwen-7b, want below the objective and spent", att["chat-qwen-7b"], budget["chat-qwen-7b"])
	}
	if !(budget["chat-llama-8b"] > 0) {
		t.Errorf("engine-queueing: chat-llama-8b keeps its TTFT budget, has %g", budget["chat-llama-8b"])
	}
	t.Logf("engine-queueing: TTFT attainment %v, budget left %v", att, budget)

	crash := startFleet(t, "model-crash")
	att, budget = crash.run(t, avail["A"], nil).by(sc.LabelEndpoint), crash.run(t, avail["B"], nil).by(sc.LabelEndpoint)
	if !(budget["summarize"] < 0) || !(budget["docs-qa"] > 0) {
		t.Errorf("model-crash: availability budget %v, want summarize spent and docs-qa not", budget)
	}
	t.Logf("model-crash: availability %v, budget left %v", att, budget)
}
