package diagnosis

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// loadExpr: concurrent requests per copy, per IC over time (the metric IC autoscaling
// targets). It carries only the IC dimension, so the endpoint filter is applied through
// icEndpointsExpr.
func (e *env) loadExpr() string {
	var m []string
	if e.scope.InferenceComponent != "" {
		m = append(m, px.Eq(semconv.DimInferenceComponentName, e.scope.InferenceComponent))
	}
	return fmt.Sprintf("max %s (avg_over_time(%s[%s]))", px.By(semconv.DimInferenceComponentName), px.Sel(semconv.ConcurrentRequestsPerCopy, m...), promDur(e.step))
}

// icEndpointsExpr: which endpoint each IC belongs to (GPUs owned by an IC carry both labels).
func (e *env) icEndpointsExpr() string {
	return fmt.Sprintf("count %s (last_over_time(%s[%s]))", px.By(lEP, lIC), e.eng(semconv.DCGMGPUUtil, px.Neq(lIC, "")), e.rng())
}

// scalingEventsExpr: scaling actions per endpoint/IC/direction over time; the value is the
// action's end-to-end duration in seconds. Events are sparse samples at event time.
func (e *env) scalingEventsExpr() string {
	return fmt.Sprintf("max %s (max_over_time(%s[%s]))", px.By(lEP, lIC, semconv.LabelScalingDirection), e.eng(semconv.ScalingE2EDuration), promDur(e.step))
}

type scaleEvent struct {
	at  time.Time
	dur float64 // seconds
}

// runScaling: load per copy above the target for longer than ScalingOverload with no
// scale-out afterwards means autoscaling did not fire (no policy, wrong metric, max capacity
// reached, or ICE); a scale-out that took longer than SlowScaling is slow scaling.
func runScaling(ctx context.Context, e *env) ([]Finding, error) {
	lq, sq, mq := e.loadExpr(), e.scalingEventsExpr(), e.icEndpointsExpr()
	// The load is read from ScalingBaseline before the range too: the IC's usual level, when
	// no target is known, must not come from the overload itself.
	lm, err := e.matrixFrom(ctx, lq, e.start.Add(-e.cfg.ScalingBaseline))
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
	icEP := map[string]string{}
	for _, s := range mv {
		icEP[label(s.Metric, lIC)] = label(s.Metric, lEP)
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
		// The policy's target when configured; otherwise a rise well above the IC's own usual
		// load (its first quartile over the range and the baseline before it, the level
		// autoscaling normally holds).
		limit, explicit := e.cfg.ScalingTarget, e.cfg.ScalingTarget > 0
		if v, ok := e.cfg.ScalingTargets[ic]; ok {
			limit, explicit = v, true
		}
		usual := quantile(values(s), 0.25)
		inside := inRange(s.Values, e.start) // a subslice: the memoised result stays whole for others
		if !explicit {
			if !(usual > 0) {
				continue
			}
			limit = e.cfg.ScalingRise * usual
		}
		from, to, peak := longestAbove(inside, limit)
		if from.IsZero() || to.Sub(from)+e.step < e.cfg.ScalingOverload {
			continue
		}
		over := fmt.Sprintf("the target %s", num(limit))
		if !explicit {
			over = fmt.Sprintf("%s× its usual %s", num(e.cfg.ScalingRise), num1(usual))
		}
		var first *scaleEvent
		for i, ev := range outs[name] {
			if !ev.at.Before(from.Add(-e.step)) && (first == nil || ev.at.Before(first.at)) {
				first = &outs[name][i]
			}
		}
		ev := []Evidence{
			{What: "concurrent requests per copy above " + over, Value: fmt.Sprintf("peak %s, %s → %s (%s)", num1(peak), from.UTC().Format("15:04"), to.UTC().Format("15:04"), fmtDur(to.Sub(from)+e.step)), Query: lq},
		}
		if first == nil {
			ev = append(ev, Evidence{What: "scale-out events since the load rose", Value: "0", Query: sq})
			// Against the policy's own target this is certain; against the inferred level
			// the load may still be under a target we cannot see.
			sev := Warning
			if explicit {
				sev = Critical
			}
			out = append(out, Finding{
				Cause: "Autoscaling did not fire", Target: t, Severity: sev, Score: strength(peak/limit, 1, 5),
				Summary:  fmt.Sprintf("Load per copy of %s stayed above %s for %s (peak %s) with no scale-out", name, over, fmtDur(to.Sub(from)+e.step), num1(peak)),
				Evidence: ev,
				Next:     "Check the scaling policy (registered target, metric ConcurrentRequestsPerCopy / InvocationsPerCopy, target value, cooldowns), the max capacity, and ICE events blocking new instances.",
			})
			reported[name] = true
			continue
		}
		// A delay counts only against a known target: an inferred threshold can be crossed
		// long before the policy's own.
		delay := first.at.Sub(from)
		if explicit && delay >= e.cfg.SlowScaling {
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

// inRange drops the points before start (the baseline part of a query).
func inRange(ps []model.SamplePair, start time.Time) []model.SamplePair {
	from := model.TimeFromUnixNano(start.UnixNano())
	for i, p := range ps {
		if p.Timestamp >= from {
			return ps[i:]
		}
	}
	return nil
}
