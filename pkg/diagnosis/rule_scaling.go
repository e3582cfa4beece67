package diagnosis

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// loadExpr: concurrent requests per copy, per IC over time (the metric IC autoscaling
// targets). It carries only the IC dimension, so the endpoint filter is applied through
// icEndpointsExpr.
func (e *env) loadExpr() string {
	var m []string
	if e.scope.InferenceComponent != "" {
		m = append(m, matcher(semconv.DimInferenceComponentName, "=", e.scope.InferenceComponent))
	}
	return fmt.Sprintf("max %s (avg_over_time(%s[%s]))", by(semconv.DimInferenceComponentName), sel(semconv.ConcurrentRequestsPerCopy, m...), promDur(e.step))
}

// icEndpointsExpr: which endpoint each IC belongs to (GPUs owned by an IC carry both labels).
func (e *env) icEndpointsExpr() string {
	return fmt.Sprintf("count %s (last_over_time(%s[%s]))", by(lEP, lIC), e.eng(semconv.DCGMGPUUtil, matcher(lIC, "!=", "")), e.rng())
}

// waitingRangeExpr: waiting requests per endpoint/IC over time (worst copy).
func (e *env) waitingRangeExpr() string {
	return engines(semconv.VLLMWaiting, semconv.SGLangQueued, func(m string) string {
		return fmt.Sprintf("max %s (max_over_time(%s[%s]))", by(lEP, lIC), e.eng(m), promDur(e.step))
	})
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
	lq, sq, mq, wq := e.loadExpr(), e.scalingEventsExpr(), e.icEndpointsExpr(), e.waitingRangeExpr()
	lm, err := e.matrix(ctx, lq)
	if err != nil || len(lm) == 0 {
		return nil, err
	}
	sm, err := e.matrix(ctx, sq)
	if err != nil {
		return nil, err
	}
	mv, err := e.instant(ctx, mq)
	if err != nil {
		return nil, err
	}
	wm, err := e.matrix(ctx, wq)
	if err != nil {
		return nil, err
	}
	icEP := map[string]string{}
	for _, s := range mv {
		icEP[label(s.Metric, lIC)] = label(s.Metric, lEP)
	}
	waiting := map[string]map[model.Time]float64{}
	for _, s := range wm {
		w := map[model.Time]float64{}
		for _, p := range s.Values {
			w[p.Timestamp] = float64(p.Value)
		}
		waiting[label(s.Metric, lIC)] = w
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
		ic := label(s.Metric, semconv.DimInferenceComponentName)
		ep, known := icEP[ic]
		if e.scope.Endpoint != "" && (!known || ep != e.scope.Endpoint) {
			continue // another endpoint's IC
		}
		name, t := ic, Target{Level: LevelIC, Name: ic, Endpoint: ep, InferenceComponent: ic}
		target := e.cfg.ScalingTarget
		if v, ok := e.cfg.ScalingTargets[ic]; ok {
			target = v
		}
		// Over the target and requests queue (when the engine reports a queue): the harm
		// scaling exists to prevent.
		w, hasQueue := waiting[ic]
		over := make([]model.SamplePair, 0, len(s.Values))
		for _, p := range s.Values {
			if hasQueue && !(w[p.Timestamp] >= e.cfg.WaitingRequests) {
				p.Value = model.SampleValue(math.NaN())
			}
			over = append(over, p)
		}
		from, to, peak := longestAbove(over, target)
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
			{What: "concurrent requests per copy over the target", Value: fmt.Sprintf("peak %s vs target %s, %s → %s (%s)", num1(peak), num(target), from.UTC().Format("15:04"), to.UTC().Format("15:04"), fmtDur(to.Sub(from)+e.step)), Query: lq},
		}
		if hasQueue {
			ev = append(ev, Evidence{What: "waiting requests during the overload", Value: fmt.Sprintf("≥ %s at every step", num(e.cfg.WaitingRequests)), Query: wq})
		}
		if first == nil {
			ev = append(ev, Evidence{What: "scale-out events since the load rose", Value: "0", Query: sq})
			out = append(out, Finding{
				Cause: "Autoscaling did not fire", Target: t, Severity: Critical, Score: strength(peak/target, 1, 5),
				Summary:  fmt.Sprintf("Load per copy of %s stayed above the target %s for %s (peak %s) with requests queueing and no scale-out", name, num(target), fmtDur(to.Sub(from)+e.step), num1(peak)),
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
		if reported[name] || (e.scope.Endpoint != "" && eps[name] != e.scope.Endpoint) {
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
