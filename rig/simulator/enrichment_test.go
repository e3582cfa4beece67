package simulator

import (
	"testing"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// enrichment-off: the account publishes engine, DCGM and host series but no enriched vended
// metric; healthy publishes both.
func TestEnrichmentOff(t *testing.T) {
	for _, c := range []struct {
		scenario   string
		wantVended bool
	}{{"healthy", true}, {"enrichment-off", false}} {
		db := backfilled(t, c.scenario, 1)
		for _, m := range []string{sc.DCGMGPUUtil, sc.VLLMRunning, sc.NodeMemTotal} {
			if len(query(t, db, m, sc.LabelHostID)) == 0 {
				t.Errorf("%s: no %s", c.scenario, m)
			}
		}
		vended := query(t, db, `count({"@instrumentation.@name"="`+sc.ScopeSageMakerVended+`", __name__=~".+"})`, "")
		if got := len(vended) > 0; got != c.wantVended {
			t.Errorf("%s: vended series present = %v, want %v", c.scenario, got, c.wantVended)
		}
	}
}

// Prefix caches: vLLM counts looked-up and found prompt tokens, SGLang reports a ratio; both
// give a hit rate between 0 and 1 per model, lower when kv-saturation sends long new contexts.
func TestPrefixCacheHitRate(t *testing.T) {
	vllm := `sum by (model_name) (rate({"vllm:prefix_cache_hits_total"}[30m])) / sum by (model_name) (rate({"vllm:prefix_cache_queries_total"}[30m]))`
	sgl := `avg by (model_name) ({"sglang:cache_hit_rate"})`
	healthy, saturated := backfilled(t, "healthy", 2), backfilled(t, "kv-saturation", 2)
	for _, expr := range []string{vllm, sgl} {
		rates := query(t, healthy, expr, sc.LabelModelName)
		if len(rates) == 0 {
			t.Fatalf("no hit rate: %s", expr)
		}
		for m, r := range rates {
			if !(r > 0.1 && r < 0.7) {
				t.Errorf("%s hit rate %g, want within the simulated 0.15–0.65", m, r)
			}
		}
	}
	h, s := query(t, healthy, vllm, sc.LabelModelName), query(t, saturated, vllm, sc.LabelModelName)
	llama := "meta-llama/Llama-3.1-8B-Instruct"
	if !(s[llama] < h[llama]) {
		t.Errorf("kv-saturation hit rate of %s %g, healthy %g: long new prompts should hit less", llama, s[llama], h[llama])
	}
}

// Every metric the simulator publishes with the vended scope is in semconv's table of
// vended (delta) names, so query checks that consult the table know all of them.
func TestEveryVendedNameIsInSemconv(t *testing.T) {
	names := query(t, backfilled(t, "healthy", 1), `count by (__name__) ({"@instrumentation.@name"="`+sc.ScopeSageMakerVended+`", __name__=~".+"})`, "__name__")
	if len(names) < 20 {
		t.Fatalf("only %d vended metrics: %v", len(names), names)
	}
	for n := range names {
		if !sc.IsVended(n) {
			t.Errorf("the simulator publishes vended %s, which semconv.IsVended does not know", n)
		}
	}
}
