package diagnosis

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// loadExpr: concurrent requests per copy, per IC over time (the metric autoscaling targets).
func (e *env) loadExpr() string {
	return fmt.Sprintf("max %s (max_over_time(%s[%s]))", by(semconv.DimEndpointName, semconv.DimInferenceComponentName), e.classic(semconv.ConcurrentRequestsPerCopy), promDur(e.step))
}

// scalingEventsExpr: scaling actions per endpoint/IC/direction over time; the value is the
// action's end-to-end duration in seconds. Events are sparse samples at event time.
func (e *env) scalingEventsExpr() string {
	return fmt.Sprintf("max %s (max_over_time(%s[%s]))", by(lEP, lIC, semconv.LabelScalingDirection), e.eng(semconv.ScalingE2EDuration), promDur(e.step))
}

type scaleEvent struct {
	at  time.Time
	dur float64 // seconds
}

// runScaling: load per copy above the target for longer than ScalingOverload with no
// scale-out afterwards means autoscaling did not fire (no policy, wrong metric, max capacity
// reached, or ICE); a scale-out that took longer than SlowScaling is slow scaling.
func runScaling(ctx context.Context, e *env) ([]Finding, error) {
	lq, sq := e.loadExpr(), e.scalingEventsExpr()
	lm, err := e.matrix(ctx, lq)
	if err != nil {
		return nil, err
	}
	sm, err := e.matrix(ctx, sq)
	if err != nil {
		return nil, err
	}
	outs := map[string][]scaleEvent{} // scale-outs by IC name, else endpoint name
	eps := map[string]string{}
	for _, s := range sm {
		if label(s.Metric, semconv.LabelScalingDirection) != semconv.ScaleOut {
			continue
		}
		k := label(s.Metric, lIC)
		if k == "" {
			k = label(s.Metric, lEP)
		}
		eps[k] = label(s.Metric, lEP)
		outs[k] = append(outs[k], eventsOf(s, e.step)...)
	}
	var out []Finding
	reported := map[string]bool{}
	for _, s := range lm {
		ic, ep := label(s.Metric, semconv.DimInferenceComponentName), label(s.Metric, semconv.DimEndpointName)
		name, t := ic, Target{Level: LevelIC, Name: ic, Endpoint: ep, InferenceComponent: ic}
		if ic == "" {
			name, t = ep, Target{Level: LevelEndpoint, Name: ep, Endpoint: ep}
		}
		from, to, peak := longestAbove(s.Values, e.cfg.ScalingTarget)
		if from.IsZero() || to.Sub(from)+e.step < e.cfg.ScalingOverload {
			continue
		}
		var first *scaleEvent
		for i, ev := range outs[name] {
			if !ev.at.Before(from.Add(-e.step)) && (first == nil || ev.at.Before(first.at)) {
				first = &outs[name][i]
			}
		}
		ev := []Evidence{
			{What: "concurrent requests per copy over the target", Value: fmt.Sprintf("peak %s vs target %s, %s → %s (%s)", num1(peak), num(e.cfg.ScalingTarget), from.UTC().Format("15:04"), to.UTC().Format("15:04"), fmtDur(to.Sub(from)+e.step)), Query: lq},
		}
		if first == nil {
			ev = append(ev, Evidence{What: "scale-out events since the load rose", Value: "0", Query: sq})
			out = append(out, Finding{
				Cause: "Autoscaling did not fire", Target: t, Severity: Critical, Score: strength(peak/e.cfg.ScalingTarget, 1, 5),
				Summary:  fmt.Sprintf("Load per copy of %s stayed above the target %s for %s with no scale-out", name, num(e.cfg.ScalingTarget), fmtDur(to.Sub(from)+e.step)),
				Evidence: ev,
				Next:     "Check the scaling policy (registered target, metric ConcurrentRequestsPerCopy / InvocationsPerCopy, target value, cooldowns), the max capacity, and ICE events blocking new instances.",
			})
			reported[name] = true
			continue
		}
		delay := first.at.Sub(from)
		if delay >= e.cfg.SlowScaling {
			ev = append(ev, Evidence{What: "first scale-out after the load rose", Value: fmt.Sprintf("%s later at %s (took %s)", fmtDur(delay), first.at.UTC().Format("15:04"), secs(first.dur)), Query: sq})
			out = append(out, slowScaling(t, name, delay, ev))
			reported[name] = true
		}
	}
	// Slow scale-outs not tied to a visible overload.
	for name, evs := range outs {
		if reported[name] {
			continue
		}
		var worst *scaleEvent
		for i := range evs {
			if worst == nil || evs[i].dur > worst.dur {
				worst = &evs[i]
			}
		}
		if worst == nil || worst.dur < e.cfg.SlowScaling.Seconds() {
			continue
		}
		t := Target{Level: LevelIC, Name: name, Endpoint: eps[name], InferenceComponent: name}
		if name == eps[name] {
			t = Target{Level: LevelEndpoint, Name: name, Endpoint: name}
		}
		out = append(out, slowScaling(t, name, time.Duration(worst.dur*float64(time.Second)), []Evidence{
			{What: "slowest scale-out (e2e_duration)", Value: fmt.Sprintf("%s at %s", secs(worst.dur), worst.at.UTC().Format("15:04")), Query: sq},
		}))
	}
	return out, nil
}

func slowScaling(t Target, name string, took time.Duration, ev []Evidence) Finding {
	return Finding{
		Cause: "Slow scaling", Target: t, Severity: Warning, Score: strength(took.Minutes(), 0, 60),
		Summary:  fmt.Sprintf("Scaling out %s took %s", name, fmtDur(took)),
		Evidence: ev,
		Next:     "Shorten cold starts (see the cold start anatomy), keep warm capacity or a lower target so scale-out starts earlier, and check for ICE on the instance type.",
	}
}

// eventsOf turns a max_over_time(event[step]) series into events: a point holds the events
// of the step before it (range windows are left-open, so each event lands in one point).
func eventsOf(s *model.SampleStream, step time.Duration) []scaleEvent {
	var out []scaleEvent
	for _, p := range s.Values {
		if v := float64(p.Value); finite(v) {
			out = append(out, scaleEvent{at: p.Timestamp.Time().Add(-step / 2), dur: v})
		}
	}
	return out
}

// longestAbove returns the longest run of consecutive points above limit, and its peak.
func longestAbove(ps []model.SamplePair, limit float64) (from, to time.Time, peak float64) {
	var cur, best struct {
		from, to model.Time
		n        int
		peak     float64
	}
	for _, p := range ps {
		v := float64(p.Value)
		if finite(v) && v > limit {
			if cur.n == 0 {
				cur.from, cur.peak = p.Timestamp, v
			}
			cur.n++
			cur.to = p.Timestamp
			cur.peak = max(cur.peak, v)
			if cur.n > best.n {
				best = cur
			}
			continue
		}
		cur.n = 0
	}
	if best.n == 0 {
		return time.Time{}, time.Time{}, 0
	}
	return best.from.Time(), best.to.Time(), best.peak
}
