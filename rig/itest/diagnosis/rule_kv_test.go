package diagnosis_test

import (
	"math"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestKVRule(t *testing.T) {
	type copyData struct{ kv, waiting, preempt func(int) float64 }
	cases := []struct {
		name     string
		ic       copyData
		wantSev  Severity
		wantNone bool
	}{
		{name: "saturated with waiting requests", ic: copyData{constant(0.97), constant(6), constant(0.5)}, wantSev: Critical},
		{name: "saturated in the last part only", ic: copyData{stepAt(40, 0.3, 0.96), stepAt(40, 0, 3), constant(0)}, wantSev: Critical},
		{name: "full but nothing waits", ic: copyData{constant(0.93), constant(0), constant(0)}, wantSev: Warning},
		{name: "warm at early-warning level", ic: copyData{constant(0.6), constant(0), constant(0)}, wantSev: Info},
		{name: "one brief peak is not saturation", ic: copyData{func(i int) float64 {
			if i == 100 {
				return 1
			}
			return 0.2
		}, constant(0), constant(0)}, wantNone: true},
		{name: "NaN samples", ic: copyData{constant(math.NaN()), constant(math.NaN()), constant(0)}, wantNone: true},
		{name: "no data", wantNone: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			if c.ic.kv != nil {
				for _, h := range []string{"i-1", "i-2"} {
					kv := engLabels("ep-a", "ic-a", h, "az-1")
					d.float(lbls(semconv.VLLMKVCacheUsage, kv...), c.ic.kv)
					d.float(lbls(semconv.VLLMWaiting, kv...), c.ic.waiting)
					d.counter(lbls(semconv.VLLMPreemptions, kv...), c.ic.preempt)
				}
				// a healthy neighbour that must stay quiet
				ok := engLabels("ep-a", "ic-b", "i-3", "az-1")
				d.float(lbls(semconv.VLLMKVCacheUsage, ok...), constant(0.2))
				d.float(lbls(semconv.VLLMWaiting, ok...), constant(0))
			}
			r := diagnose(t, d.querier(), Scope{}, "kv-cache-saturation")
			if c.wantNone {
				if len(r.Findings) != 0 {
					t.Fatalf("want no finding, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 {
				t.Fatalf("want one finding, got%s", describe(r.Findings))
			}
			f := r.Findings[0]
			if f.Severity != c.wantSev || f.Target.Level != LevelIC || f.Target.Name != "ic-a" || f.Target.Endpoint != "ep-a" {
				t.Fatalf("got %s on %+v, want %s on ic-a", f.Severity, f.Target, c.wantSev)
			}
			if len(f.Evidence) == 0 || f.Evidence[0].Query == "" || f.PanelLink == "" {
				t.Fatalf("finding lacks evidence or link: %+v", f)
			}
		})
	}
}

func TestKVRuleSGLangAndScope(t *testing.T) {
	d := newData(t)
	a := engLabels("ep-a", "", "i-1", "az-1")
	d.float(lbls(semconv.SGLangTokenUsage, a...), constant(0.95))
	d.float(lbls(semconv.SGLangQueued, a...), constant(4))
	b := engLabels("ep-b", "", "i-2", "az-1")
	d.float(lbls(semconv.VLLMKVCacheUsage, b...), constant(0.95))
	q := d.querier()
	r := diagnose(t, q, Scope{Endpoint: "ep-a"}, "kv-cache-saturation")
	if len(r.Findings) != 1 || r.Findings[0].Target.Name != "ep-a" || r.Findings[0].Target.Level != LevelEndpoint || r.Findings[0].Severity != Critical {
		t.Fatalf("endpoint scope ep-a: want one critical finding on endpoint ep-a, got%s", describe(r.Findings))
	}
}
