package diagnosis_test

import (
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestThroughputRule(t *testing.T) {
	cases := []struct {
		name        string
		tokens      func(int) float64 // per minute
		invocations func(int) float64 // per minute
		sev         Severity
		cause       string
	}{
		{"engine slower at the same demand", stepAt(150, 30000, 3000), constant(100), Warning, "far below"},
		{"demand fell", stepAt(150, 30000, 3000), stepAt(150, 100, 10), Info, "with demand"},
		{"steady", constant(30000), constant(100), 0, ""},
		{"idle engine", constant(0), constant(0), 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			d.counter(lbls(semconv.VLLMGenerationTokens, engLabels("ep-a", "", "i-1", "az-1")...), c.tokens)
			d.classic(semconv.Invocations, "ep-a", c.invocations)
			r := diagnose(t, d.querier(), Scope{}, "throughput-drop")
			if c.cause == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 || r.Findings[0].Severity != c.sev || !strings.Contains(r.Findings[0].Cause, c.cause) || r.Findings[0].Target.Name != "ep-a" {
				t.Fatalf("want %s %q, got%s", c.sev, c.cause, describe(r.Findings))
			}
		})
	}
}
