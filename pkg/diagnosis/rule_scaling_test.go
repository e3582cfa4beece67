package diagnosis

import (
	"testing"
	"time"
)

// TestOverloadFirst: a missing scale-out ranks above the KV saturation or engine queueing it
// led to on the same IC, and only then.
func TestOverloadFirst(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	ic := Target{Level: LevelIC, Name: "ic1", Endpoint: "ep"}
	e := &env{cfg: DefaultConfig(), step: 5 * time.Minute}
	late := t0.Add(e.cfg.ScalingOverload + e.step) // autoscaling had its time to act
	cases := []struct {
		name     string
		rule     string
		began    time.Time
		target   Target
		severity Severity // of the scaling finding; the other one is critical
		wantTop  string
	}{
		{"KV saturation after the overload", "kv-cache-saturation", late, ic, Critical, "scaling"},
		{"engine queueing after the overload", "engine-queueing", t0.Add(2 * time.Hour), ic, Critical, "scaling"},
		{"KV saturation with the overload", "kv-cache-saturation", t0.Add(e.step), ic, Critical, "kv-cache-saturation"},
		{"KV saturation before the overload", "kv-cache-saturation", t0.Add(-time.Hour), ic, Critical, "kv-cache-saturation"},
		{"KV saturation on another IC", "kv-cache-saturation", late, Target{Level: LevelIC, Name: "ic2", Endpoint: "ep"}, Critical, "kv-cache-saturation"},
		{"KV saturation more severe", "kv-cache-saturation", late, ic, Warning, "kv-cache-saturation"},
		{"another rule after the overload", "gpu-hardware", late, ic, Critical, "gpu-hardware"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := []Finding{
				{Rule: "scaling", Cause: causeNoScaleOut, Target: ic, Severity: c.severity, Score: 74.2, began: t0},
				{Rule: c.rule, Cause: "x", Target: c.target, Severity: Critical, Score: 88, began: c.began},
			}
			e.overloadFirst(fs)
			Rank(fs)
			if fs[0].Rule != c.wantTop {
				t.Fatalf("top %s (score %.2f), want %s", fs[0].Rule, fs[0].Score, c.wantTop)
			}
		})
	}
}
