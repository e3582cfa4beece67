package diagnosis_test

import (
	"math"
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestGPUHealthRules(t *testing.T) {
	hwThermal := float64(semconv.ThrottleHWThermal | semconv.ThrottleSWThermal)
	cases := []struct {
		name                 string
		xid, dbe, sbe, thrtl func(int) float64 // the second GPU of i-bad; the others stay clean
		rule                 string
		sev                  Severity
		cause                string
	}{
		{"healthy", constant(0), constant(0), constant(0), constant(1), "", 0, ""},
		{"double-bit ECC with XID 48", stepAt(40, 0, 48), stepAt(40, 0, 1), ramp(0, 30), constant(0), "gpu-hardware", Critical, "hardware errors"},
		{"application XID only", stepAt(40, 0, 13), constant(0), constant(0), constant(0), "", 0, ""},
		{"corrected errors rising", constant(0), constant(0), ramp(0, 40), constant(0), "gpu-hardware", Warning, "Corrected"},
		{"thermal throttling half the range", constant(0), constant(0), constant(0), stepAt(30, 0, hwThermal), "gpu-thermal", Warning, "thermal"},
		{"power cap is not thermal", constant(0), constant(0), constant(0), constant(float64(semconv.ThrottleSWPowerCap)), "", 0, ""},
		{"NaN", constant(math.NaN()), constant(math.NaN()), constant(math.NaN()), constant(math.NaN()), "", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			for _, host := range []string{"i-good", "i-bad"} {
				for _, gpu := range []string{"0", "1"} {
					l := append(engLabels("ep-a", "ic-a", host, "az-1"), semconv.LabelGPU, gpu)
					bad := host == "i-bad" && gpu == "1"
					pick := func(f func(int) float64, clean float64) func(int) float64 {
						if bad {
							return f
						}
						return constant(clean)
					}
					d.float(lbls(semconv.DCGMXIDErrors, l...), pick(c.xid, 0))
					d.float(lbls(semconv.DCGMECCDBEVolatile, l...), pick(c.dbe, 0))
					d.float(lbls(semconv.DCGMECCSBEVolatile, l...), pick(c.sbe, 0))
					d.float(lbls(semconv.DCGMThrottleReasons, l...), pick(c.thrtl, 1))
					d.float(lbls(semconv.DCGMGPUTemp, l...), constant(60))
				}
			}
			r := diagnose(t, d.querier(), Scope{}, "gpu-hardware", "gpu-thermal")
			if r.Requests != 1 {
				t.Errorf("%d requests: both rules share one", r.Requests)
			}
			if c.rule == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			fs := only(r.Findings, c.rule)
			if len(r.Findings) != 1 || len(fs) != 1 {
				t.Fatalf("want one %s finding, got%s", c.rule, describe(r.Findings))
			}
			f := fs[0]
			if f.Severity != c.sev || !strings.Contains(f.Cause, c.cause) || f.Target.Level != LevelInstance || f.Target.Instance != "i-bad" ||
				f.Target.InferenceComponent != "ic-a" || !strings.Contains(f.PanelLink, "viewPanel=4") {
				t.Fatalf("got%s (%+v, %s)", describe(r.Findings), f.Target, f.PanelLink)
			}
		})
	}
}
