package diagnosis_test

import (
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestAZRule(t *testing.T) {
	cases := []struct {
		name    string
		perAZ   map[string]func(int) float64 // invocations per minute per AZ (2 instances each)
		want    Level
		wantAZ  string
		wantSev Severity
	}{
		{"one AZ stops receiving traffic", map[string]func(int) float64{"az-1": constant(100), "az-2": constant(100), "az-3": stepAt(100, 100, 0)}, LevelAZ, "az-3", Critical},
		{"one AZ gets a fraction", map[string]func(int) float64{"az-1": constant(100), "az-2": constant(100), "az-3": constant(10)}, LevelAZ, "az-1", Info},
		{"balanced", map[string]func(int) float64{"az-1": constant(100), "az-2": constant(90), "az-3": constant(110)}, "", "", 0},
		{"brief dip is not starvation", map[string]func(int) float64{"az-1": constant(100), "az-2": constant(100), "az-3": func(i int) float64 {
			if i > 60 && i < 70 {
				return 0
			}
			return 100
		}}, "", "", 0},
		{"no traffic anywhere", map[string]func(int) float64{"az-1": constant(0), "az-2": constant(0)}, "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			for az, f := range c.perAZ {
				for _, h := range []string{"i-" + az + "-1", "i-" + az + "-2"} {
					d.float(lbls(semconv.NodeMemTotal, engLabels("ep-a", "", h, az)...), constant(1e9))
				}
				d.float(lbls(semconv.InvocationsByAzByInstanceType, semconv.DimEndpointName, "ep-a", semconv.DimAvailabilityZone, az, semconv.DimInstanceType, "ml.g5.2xlarge"), f)
			}
			r := diagnose(t, d.querier(), Scope{Endpoint: "ep-a"}, "az-traffic")
			if c.want == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 {
				t.Fatalf("want one, got%s", describe(r.Findings))
			}
			f := r.Findings[0]
			if f.Target.Level != c.want || f.Target.Name != c.wantAZ || f.Severity != c.wantSev || f.Target.Endpoint != "ep-a" {
				t.Fatalf("want %s on %s, got%s", c.wantSev, c.wantAZ, describe(r.Findings))
			}
		})
	}
}
