package diagnosis_test

import (
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestICERule(t *testing.T) {
	cases := []struct {
		name  string
		azs   []string       // AZs the fleet uses
		ice   map[string]int // AZ -> events of ml.p5.48xlarge
		sev   Severity
		cause string
	}{
		{"every AZ", []string{"az-1", "az-2", "az-3"}, map[string]int{"az-1": 3, "az-2": 4, "az-3": 5}, Critical, "every AZ"},
		{"one AZ", []string{"az-1", "az-2", "az-3"}, map[string]int{"az-2": 2}, Warning, "some AZs"},
		// A fleet in one AZ has nowhere else to go: the summary says so, not an empty list of AZs.
		{"the only AZ in use", []string{"az-2"}, map[string]int{"az-2": 2}, Critical, "only AZ in use"},
		{"none", []string{"az-1", "az-2", "az-3"}, nil, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			for _, az := range c.azs {
				d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-z", "", "i-"+az, az)...), constant(50))
			}
			for az, n := range c.ice {
				at := map[int]float64{}
				for k := 0; k < n; k++ {
					at[10+k*15] = 1
				}
				d.event(lbls(semconv.ICECount, semconv.LabelEndpoint, "ep-a", semconv.LabelEventInstanceType, "ml.p5.48xlarge", semconv.LabelEventAZ, az), at)
			}
			r := diagnose(t, d.querier(), Scope{}, "ice-exhaustion")
			if c.cause == "" {
				if len(r.Findings) != 0 || r.Requests != 1 {
					t.Fatalf("want none after one request, got %d requests,%s", r.Requests, describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 {
				t.Fatalf("want one, got%s", describe(r.Findings))
			}
			f := r.Findings[0]
			if f.Severity != c.sev || !strings.Contains(f.Cause, c.cause) || strings.HasSuffix(f.Summary, "in ") || f.Target.Level != LevelInstanceType || f.Target.Name != "ml.p5.48xlarge" || f.Target.Endpoint != "ep-a" {
				t.Fatalf("got%s (%+v)", describe(r.Findings), f.Target)
			}
		})
	}
}
