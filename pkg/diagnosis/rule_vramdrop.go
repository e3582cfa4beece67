package diagnosis

import (
	"context"
	"fmt"
	"math"

	"github.com/prometheus/common/model"
)

// runVRAMDrop: GPU memory that falls sharply within a few minutes means the model's process
// released it: a crash when 5xx/model errors appear at the same time, else an unload or a
// restart worth checking.
func runVRAMDrop(ctx context.Context, e *env) ([]Finding, error) {
	m, err := e.fbMatrix(ctx)
	if err != nil {
		return nil, err
	}
	var tr map[string]*traffic
	var trQ string
	k := max(1, int(math.Ceil(float64(e.cfg.VRAMDropWithin)/float64(e.step))))
	var out []Finding
	for _, s := range m {
		drop, at, before, after := largestDrop(s.Values, k)
		if drop < e.cfg.VRAMDropPct {
			continue
		}
		if tr == nil { // the error query is only needed once something dropped
			if tr, trQ, err = e.traffic(ctx); err != nil {
				return nil, err
			}
		}
		t := instanceTarget(s.Metric)
		name := t.Endpoint
		if e.scope.InferenceComponent != "" {
			name = t.InferenceComponent
		}
		when := at.Time().UTC()
		errs := 0.0
		if tt := tr[name]; tt != nil {
			errs = tt.errorsNear(when.Add(-e.cfg.VRAMDropWithin-e.step), when.Add(e.cfg.VRAMDropWithin+e.step))
		}
		final := tail(values(s.SampleStream), 0.05)
		recovered := final >= before*(1-e.cfg.VRAMDropPct/200)
		ev := []Evidence{
			{What: "framebuffer used before → after", Value: fmt.Sprintf("%s → %s at %s", pctPts(before), pctPts(after), when.Format("15:04")), Query: s.query},
			{What: "5xx + model errors around the drop", Value: count(errs), Query: trQ},
			{What: "framebuffer used now", Value: pctPts(final), Query: s.query},
		}
		f := Finding{Target: t, Evidence: ev, Score: strength(drop, e.cfg.VRAMDropPct, 100)}
		state := "did not come back"
		if recovered {
			state = "came back (restart or reload)"
		}
		if errs > 0 {
			f.Cause, f.Severity = "Model crash (sudden GPU memory drop with errors)", Critical
			f.Summary = fmt.Sprintf("GPU memory of %s fell by %s of its level at %s while %s 5xx/model errors were returned; memory %s", t.Name, pctPts(drop), when.Format("15:04"), count(errs), state)
			f.Next = "Read the container logs around that time (OOM, CUDA/XID errors, segfault); check the model version and inputs that triggered it."
		} else {
			f.Cause, f.Severity = "Sudden GPU memory drop (model unloaded or restarted)", Warning
			f.Summary = fmt.Sprintf("GPU memory of %s fell by %s of its level at %s with no errors; memory %s", t.Name, pctPts(drop), when.Format("15:04"), state)
			f.Next = "Check whether a copy was scaled in, moved or unloaded on purpose (scaling and rebalancing events); if not, read the container logs."
		}
		out = append(out, f)
	}
	return out, nil
}

// minDropFrom is the least framebuffer used % a drop is judged from: below it a model
// holds too little memory for its fall to mean anything.
const minDropFrom = 5

// largestDrop finds the largest fall, relative to where it fell from (in % of that level),
// from one of the previous k points to a point. Relative, because engines differ: vLLM
// reserves 90 % of a GPU, another engine may hold 20 %, and both falling to zero is a crash.
func largestDrop(ps []model.SamplePair, k int) (drop float64, at model.Time, before, after float64) {
	for i := 1; i < len(ps); i++ {
		v := float64(ps[i].Value)
		if !finite(v) {
			continue
		}
		for j := max(0, i-k); j < i; j++ {
			b := float64(ps[j].Value)
			if finite(b) && b >= minDropFrom && 100*(b-v)/b > drop {
				drop, at, before, after = 100*(b-v)/b, ps[i].Timestamp, b, v
			}
		}
	}
	return drop, at, before, after
}
