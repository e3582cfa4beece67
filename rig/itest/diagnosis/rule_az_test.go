package diagnosis_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
		// An incident that ended before the range did: found from its window, not from the
		// range's last quarter.
		{"one AZ silent for an hour mid-range", map[string]func(int) float64{"az-1": constant(100), "az-2": constant(100), "az-3": func(i int) float64 {
			if i >= 60 && i < 120 {
				return 0
			}
			return 100
		}}, LevelAZ, "az-3", Critical},
		// One IC's surge on an IC endpoint: the other AZ's share falls below a tenth while it
		// serves as much as ever. Imbalance, not an AZ without traffic.
		{"another AZ surges", map[string]func(int) float64{"az-1": stepAt(100, 100, 3000), "az-2": constant(100)}, LevelAZ, "az-1", Info},
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

// A range holding fewer than three steps gives the AZ rule no window to compare: it says
// there is not enough data instead of slicing out of range.
func TestAZRuleTooFewSteps(t *testing.T) {
	d := newData(t)
	for _, az := range []string{"az-1", "az-2"} {
		d.float(lbls(semconv.NodeMemTotal, engLabels("ep-a", "", "i-"+az, az)...), constant(1e9))
		d.float(lbls(semconv.InvocationsByAzByInstanceType, semconv.DimEndpointName, "ep-a", semconv.DimAvailabilityZone, az, semconv.DimInstanceType, "ml.g5.2xlarge"), constant(100))
	}
	for _, r := range []time.Duration{time.Minute, 90 * time.Second} {
		cfg := DefaultConfig()
		cfg.Rules = []string{"az-traffic"}
		rep, err := Run(context.Background(), d.querier(), Scope{}, tEnd().Add(-r), tEnd(), cfg)
		if err != nil || len(rep.Failures) != 0 || len(rep.Findings) != 0 {
			t.Fatalf("%s range: err %v, failures %+v, findings%s", r, err, rep.Failures, describe(rep.Findings))
		}
		if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "not enough data") {
			t.Fatalf("%s range: warnings %q, want not enough data", r, rep.Warnings)
		}
	}
}
