package diagnosis_test

import (
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestColdStartRule(t *testing.T) {
	cases := []struct {
		name                         string
		download, gpuLoad, contStart float64
		total                        float64 // 0: not published
		cause, advice                string
	}{
		{"download dominates", 380, 30, 20, 450, "model download", "Compress"},
		{"GPU load dominates", 40, 300, 20, 0, "GPU load", "quantisation"},
		{"container dominates", 20, 40, 300, 370, "container start", "dependencies"},
		{"slow, no dominant phase", 120, 110, 100, 0, "Slow cold start", "largest phases"},
		{"a large model's four minutes are normal", 180, 30, 20, 238, "", ""},
		{"fast cold start", 20, 12, 9, 41, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			ev := func(metric string, v float64) {
				d.event(lbls(metric, semconv.LabelEndpoint, "ep-a", semconv.LabelInferenceComp, "ic-a"), map[int]float64{30: v, 150: v})
			}
			ev(semconv.ModelDownloadTime, c.download)
			ev(semconv.GPULoadTime, c.gpuLoad)
			ev(semconv.ContainerStartTime, c.contStart)
			if c.total > 0 {
				ev(semconv.ColdStartDuration, c.total)
			}
			r := diagnose(t, d.querier(), Scope{}, "cold-start")
			if c.cause == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 {
				t.Fatalf("want one, got%s", describe(r.Findings))
			}
			f := r.Findings[0]
			if !strings.Contains(f.Cause, c.cause) || !strings.Contains(f.Next, c.advice) || f.Target.Name != "ic-a" || f.Target.Level != LevelIC {
				t.Fatalf("want %q with advice %q, got %+v", c.cause, c.advice, f)
			}
			if r.Requests != 1 {
				t.Fatalf("phases must come in one request, made %d", r.Requests)
			}
		})
	}
}
