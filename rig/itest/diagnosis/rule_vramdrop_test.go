package diagnosis_test

import (
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestVRAMDropRule(t *testing.T) {
	crash := func(i int) float64 {
		switch {
		case i < 100:
			return 88
		case i < 110:
			return 2 // process gone
		default:
			return 88 // restarted
		}
	}
	cases := []struct {
		name   string
		used   func(int) float64
		errors func(int) float64
		sev    Severity
		cause  string
	}{
		{"crash with 5xx", crash, stepAt(100, 0, 20), Critical, "Model crash"},
		{"drop without errors is an unload", crash, constant(0), Warning, "unloaded"},
		{"slow decline is not a drop", ramp(88, 40), constant(0), 0, ""},
		{"steady", constant(88), stepAt(100, 0, 20), 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			d.gpu("ep-a", "ic-a", "i-1", "az-1", c.used)
			d.gpu("ep-a", "ic-b", "i-1", "az-1", constant(40))
			d.classic(semconv.Invocations, "ep-a", constant(100))
			d.classic(semconv.Invocation5XXErrors, "ep-a", func(i int) float64 {
				if i >= 100 && i < 110 {
					return c.errors(i)
				}
				return 0
			})
			r := diagnose(t, d.querier(), Scope{}, "vram-drop")
			if c.cause == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 {
				t.Fatalf("want one finding, got%s", describe(r.Findings))
			}
			f := r.Findings[0]
			if f.Severity != c.sev || !strings.Contains(f.Cause, c.cause) || f.Target.Name != "i-1" || f.Target.InferenceComponent != "ic-a" {
				t.Fatalf("got%s", describe(r.Findings))
			}
			if !strings.Contains(f.Summary, "came back") {
				t.Errorf("the restart must be noticed: %s", f.Summary)
			}
		})
	}
}
