package diagnosis

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
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
		fromLoad bool // the other finding's saturation came from more requests of the usual size
		target   Target
		severity Severity // of the scaling finding; the other one is critical
		wantTop  string
	}{
		{"KV saturation after the overload", "kv-cache-saturation", late, false, ic, Critical, "scaling"},
		{"engine queueing after the overload", "engine-queueing", t0.Add(2 * time.Hour), false, ic, Critical, "scaling"},
		{"KV saturation with the overload, requests of another size", "kv-cache-saturation", t0.Add(e.step), false, ic, Critical, "kv-cache-saturation"},
		{"KV saturation with the overload, more requests of the usual size", "kv-cache-saturation", t0, true, ic, Critical, "scaling"},
		{"engine queueing with the overload, more requests running", "engine-queueing", t0.Add(-e.step), true, ic, Critical, "scaling"},
		{"KV saturation before the overload", "kv-cache-saturation", t0.Add(-time.Hour), false, ic, Critical, "kv-cache-saturation"},
		{"KV saturation before the overload, more requests of the usual size", "kv-cache-saturation", t0.Add(-2 * e.step), true, ic, Critical, "kv-cache-saturation"},
		{"KV saturation on another IC", "kv-cache-saturation", late, true, Target{Level: LevelIC, Name: "ic2", Endpoint: "ep"}, Critical, "kv-cache-saturation"},
		{"KV saturation more severe", "kv-cache-saturation", late, true, ic, Warning, "kv-cache-saturation"},
		{"another rule after the overload", "gpu-hardware", late, true, ic, Critical, "gpu-hardware"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := []Finding{
				{Rule: "scaling", Cause: causeNoScaleOut, Target: ic, Severity: c.severity, Score: 74.2, began: t0},
				{Rule: c.rule, Cause: "x", Target: c.target, Severity: Critical, Score: 88, began: c.began, fromLoad: c.fromLoad},
			}
			e.overloadFirst(fs)
			Rank(fs)
			if fs[0].Rule != c.wantTop {
				t.Fatalf("top %s (score %.2f), want %s", fs[0].Rule, fs[0].Score, c.wantTop)
			}
		})
	}
}

// TestFromLoad: a saturation window is the load's doing only when the copies ran well more
// requests than usual, each of its usual KV size; the usual level comes from outside the
// window, the look-back before the range included.
func TestFromLoad(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	e := &env{cfg: DefaultConfig(), step: time.Minute, start: t0.Add(time.Hour)}
	// 3 hours of minutes; the window is the last hour.
	series := func(before, inside float64) *model.SampleStream {
		s := &model.SampleStream{}
		for i := range 180 {
			v := before
			if i >= 120 {
				v = inside
			}
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * time.Minute).UnixNano()), Value: model.SampleValue(v)})
		}
		return s
	}
	ep := episode{from: t0.Add(2 * time.Hour), to: t0.Add(179 * time.Minute), points: 60}
	cases := []struct {
		name          string
		running, kv   *model.SampleStream
		want, wantEvi bool
	}{
		{"four times the requests, same size each", series(9, 36), series(0.24, 0.97), true, true},
		{"three times the requests, each four times larger", series(10, 31), series(0.06, 0.97), false, true},
		{"an engine limit: fewer requests run", series(8, 4), series(0.04, 0.02), false, true},
		{"barely more requests", series(10, 15), series(0.6, 0.9), false, true},
		{"a third smaller requests, more of them", series(10, 60), series(0.3, 0.6), false, true},
		{"usually idle copies: one running request is the usual level", series(0, 3), series(0, 0.9), false, false},
		{"no running series", nil, series(0.2, 0.97), false, false},
		{"NaN everywhere", series(math.NaN(), math.NaN()), series(math.NaN(), math.NaN()), false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := engineQueue{query: "running", running: map[string]*model.SampleStream{}}
			if c.running != nil {
				q.running["k"] = c.running
			}
			ev, got := e.fromLoad(q, c.kv, "k", ep, "kv")
			if got != c.want || (len(ev) > 0) != c.wantEvi {
				t.Fatalf("fromLoad = %v with %d evidence rows, want %v (evidence %v)", got, len(ev), c.want, c.wantEvi)
			}
		})
	}
	if _, got := e.fromLoad(engineQueue{running: map[string]*model.SampleStream{"k": series(9, 36)}}, series(0.24, 0.97), "k",
		episode{from: t0, to: t0.Add(179 * time.Minute), points: 180}, "kv"); got {
		t.Fatal("a window covering every point has no usual level to compare with: it cannot tell")
	}
}
