package diagnosis

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// loadExpr: concurrent requests per copy, per account and IC over time (the latest sample
// within the gauge window, so a coarse publish period leaves no gaps) (the metric IC
// autoscaling targets; an IC's policy is its account's). It carries only the IC dimension, so
// the endpoint filter is applied through icEndpointsExpr.
func (e *env) loadExpr() string {
	var m []string
	if e.scope.InferenceComponent != "" {
		m = append(m, px.Eq(semconv.DimInferenceComponentName, e.scope.InferenceComponent))
	}
	return fmt.Sprintf("max %s (last_over_time(%s[%s]))", px.By(semconv.LabelAccount, semconv.DimInferenceComponentName), px.Sel(semconv.ConcurrentRequestsPerCopy, m...), promDur(e.window))
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

// scalingTolerance is the overshoot of the target that autoscaling lets pass.
const scalingTolerance = 0.1

type scaleEvent struct {
	at  time.Time
	dur float64 // seconds
}

// scalingData is what the scaling rule reads, reshaped: the load per copy of each IC (with
// the baseline before the range), the endpoint of each IC, and the scale-outs per IC (or
// endpoint, for events without an IC).
type scalingData struct {
	loadQuery, eventsQuery string
	policies               *Policies // nil: not read (no source, or it failed)
	load                   model.Matrix
	endpointOf             map[string]string // IC -> endpoint (from the GPUs it owns)
	scaleOuts              map[string][]scaleEvent
	eventEndpoint          map[string]string // scale-out key -> endpoint
}

func (e *env) readScaling(ctx context.Context) (*scalingData, error) {
	d := &scalingData{loadQuery: e.loadExpr(), eventsQuery: e.scalingEventsExpr(),
		endpointOf: map[string]string{}, scaleOuts: map[string][]scaleEvent{}, eventEndpoint: map[string]string{}}
	// The load is read from ScalingBaseline before the range too: the IC's usual level, when
	// no target is known, must not come from the overload itself.
	var err error
	if d.load, err = e.matrixFrom(ctx, d.loadQuery, e.start.Add(-e.cfg.ScalingBaseline)); err != nil || len(d.load) == 0 {
		return nil, err
	}
	events, err := e.matrix(ctx, d.eventsQuery)
	if err != nil {
		return nil, err
	}
	owners, err := e.instant(ctx, e.icEndpointsExpr())
	if err != nil {
		return nil, err
	}
	for _, s := range owners {
		d.endpointOf[label(s.Metric, lIC)] = label(s.Metric, lEP)
	}
	d.policies = e.readPolicies(ctx)
	for _, s := range events {
		if label(s.Metric, semconv.LabelScalingDirection) != semconv.ScaleOut {
			continue
		}
		k := label(s.Metric, lIC)
		if k == "" {
			k = label(s.Metric, lEP)
		}
		d.eventEndpoint[k] = label(s.Metric, lEP)
		d.scaleOuts[k] = append(d.scaleOuts[k], eventsOf(s, e.step)...)
	}
	return d, nil
}

// runScaling: load per copy above the IC's policy target for longer than ScalingOverload
// (or far above it for SustainFast) means autoscaling did not fire when the IC is below its
// max capacity (no scale-out afterwards), and that the IC outgrew its max capacity when it is
// at it; without the policy, a rise to ScalingRise × the usual load for InferredOverload
// stands for it. A scale-out that took longer than SlowScaling is slow scaling.
func runScaling(ctx context.Context, e *env) ([]Finding, error) {
	d, err := e.readScaling(ctx)
	if err != nil || d == nil {
		return nil, err
	}
	var out []Finding
	reported := map[string]bool{}
	for _, s := range d.load {
		ic := label(s.Metric, semconv.DimInferenceComponentName)
		ep, known := d.endpointOf[ic]
		if e.scope.Endpoint != "" && (!known || ep != e.scope.Endpoint) {
			continue // another endpoint's IC
		}
		if f, ok := e.overload(d, s, label(s.Metric, semconv.LabelAccount), Target{Level: LevelIC, Name: ic, Endpoint: ep, InferenceComponent: ic}); ok {
			out = append(out, f)
			reported[ic] = true
		}
	}
	return append(out, e.slowScaleOuts(d, reported)...), nil
}

// overload judges the load of one IC of account acct: above its limit for ScalingOverload
// with no scale-out, or with a late one against a known target, or at its max capacity.
func (e *env) overload(d *scalingData, s *model.SampleStream, acct string, t Target) (Finding, bool) {
	ic := t.Name
	// The policy's target when it tracks this load; otherwise a rise well above the IC's own
	// usual load (its first quartile over the range and the baseline before it, the level
	// autoscaling normally holds).
	pol, registered, readable := d.policies.of(acct, ic)
	explicit := pol.TracksConcurrency()
	limit := pol.Target
	usual := quantile(values(s), 0.25)
	if !explicit {
		if !(usual > 0) {
			return Finding{}, false
		}
		limit = e.cfg.ScalingRise * usual
	}
	inside := inRange(s.Values, e.start) // a subslice: the memoised result stays whole for others
	// Target tracking tolerates a little overshoot before it scales: judge beyond it.
	run := longestRun(inside, false, func(v float64) bool { return v > limit*(1+scalingTolerance) })
	need := e.cfg.ScalingOverload
	if !explicit {
		need = e.cfg.InferredOverload()
	}
	// Far over a known target, the fast window is enough: target tracking scales out within
	// minutes of such a load.
	far := explicit && meanOf(run, inside) >= scalingFarOver*limit
	slow := run.points >= 2 && run.lasting(e) >= need // one point is one sample at coarse steps
	if !slow && !run.fast(e, far) {
		return Finding{}, false
	}
	over := fmt.Sprintf("its policy's target %s", num(limit))
	if !explicit {
		over = fmt.Sprintf("%s× its usual %s", num(e.cfg.ScalingRise), num1(usual))
	}
	ev := []Evidence{
		{What: "concurrent requests per copy above " + over, Value: fmt.Sprintf("peak %s, %s (%s)", num1(run.peak), run.when(e), fmtDur(run.lasting(e))), Query: d.loadQuery},
	}
	if d.policies != nil && !readable {
		e.warnings.add(fmt.Sprintf("%s, so the overload of its components is judged against %s× their usual load", d.policies.unreadable(acct), num(e.cfg.ScalingRise)))
	}
	// The copies were read when the policies were: they are the copies at the range's end
	// only when the overload lasts to it and it is now (within two steps of the read).
	var copiesWhy string
	if registered {
		copiesWhy = d.copiesUnknown(pol)
		if copiesWhy == "" && (run.to.Before(e.end.Add(-e.step)) || e.end.Before(d.policies.CopiesAt.Add(-2*e.step))) {
			copiesWhy = fmt.Sprintf("its copies at that time are unknown: %d is its count now", pol.Copies)
		}
		ev = append(ev, Evidence{What: "scaling policy (Application Auto Scaling)", Value: pol.String()})
		if copiesWhy != "" {
			ev = append(ev, Evidence{What: "copies at the time", Value: copiesWhy})
		}
	}
	// At its max capacity, still over target now: scaling out cannot help, a larger max can.
	if explicit && copiesWhy == "" && pol.Copies >= pol.Max {
		return Finding{
			Cause: causeAtMax, Target: t, Severity: Critical, Score: strength(run.peak/limit, 1, 5), began: run.from,
			Summary:  fmt.Sprintf("%s runs at its max capacity (%d copies) and load per copy stayed above %s for %s (peak %s)", ic, pol.Max, over, fmtDur(run.lasting(e)), num1(run.peak)),
			Evidence: ev,
			Next:     "Raise the scalable target's MaxCapacity (application-autoscaling register-scalable-target) and make room for the copies: add instances to the endpoint (its managed instance scaling max) or use a larger instance type.",
		}, true
	}
	var first *scaleEvent
	for i, ev := range d.scaleOuts[ic] {
		if !ev.at.Before(run.from.Add(-e.step)) && (first == nil || ev.at.Before(first.at)) {
			first = &d.scaleOuts[ic][i]
		}
	}
	if first == nil {
		ev = append(ev, Evidence{What: "scale-out events since the load rose", Value: "0", Query: d.eventsQuery})
		// Against the policy's own target this is certain; against the inferred level
		// the load may still be under a target we cannot see.
		sev := Warning
		if explicit {
			sev = Critical
		}
		return Finding{
			Cause: causeNoScaleOut, Target: t, Severity: sev, Score: strength(run.peak/limit, 1, 5), began: run.from,
			Summary:  fmt.Sprintf("Load per copy of %s stayed above %s for %s (peak %s) with no scale-out", ic, over, fmtDur(run.lasting(e)), num1(run.peak)),
			Evidence: ev,
			Next:     d.noScaleOutNext(ic, acct, pol, registered, readable, copiesWhy),
		}, true
	}
	// A delay counts only against a known target: an inferred threshold can be crossed
	// long before the policy's own.
	// Event times are known to a step: only a delay beyond that counts.
	delay := first.at.Sub(run.from)
	if !explicit || delay-e.step < slowScalingAfter {
		return Finding{}, false
	}
	ev = append(ev, Evidence{What: "first scale-out after the load rose", Value: fmt.Sprintf("%s later at %s (took %s)", fmtDur(delay), e.clock(first.at), secs(first.dur)), Query: d.eventsQuery})
	return slowScaling(t, ic, delay, ev), true
}

// copiesUnknown says why the read has no copy count for pol, a registered IC's policy ("" when
// it has one).
func (d *scalingData) copiesUnknown(pol Policy) string {
	switch {
	case pol.Copies >= 0:
		return ""
	case d.policies.CopiesErr != nil:
		return "its copies could not be read: " + d.policies.CopiesErr.Error()
	}
	return "its copies could not be read"
}

// noScaleOutNext is what to check when the policy did not scale out, by what the policy
// read says; copiesWhy is why the copies at the time are unknown ("" when known).
func (d *scalingData) noScaleOutNext(ic, acct string, pol Policy, registered, readable bool, copiesWhy string) string {
	switch {
	case d.policies != nil && !readable:
		where := fmt.Sprintf("%s is in account %s, whose autoscaling this data source's credentials cannot read", ic, acct)
		if len(d.policies.Own) == 0 {
			where = fmt.Sprintf("Application Auto Scaling returned no scalable target: if account %s is this data source's own, register one for %s (sagemaker:inference-component:DesiredCopyCount) with a target tracking policy on ConcurrentRequestsPerCopy; otherwise it is a source account whose autoscaling these credentials cannot read", acct, ic)
		}
		return where + ": check its scaling policy there (registered target, metric ConcurrentRequestsPerCopy, target value, cooldowns), the max capacity, and ICE events blocking new instances."
	case d.policies != nil && !registered:
		return fmt.Sprintf("%s has no scalable target in Application Auto Scaling: register one (sagemaker:inference-component:DesiredCopyCount) with a target tracking policy on ConcurrentRequestsPerCopy.", ic)
	case registered && pol.Target == 0:
		return fmt.Sprintf("%s's scalable target has no target tracking policy: add one on ConcurrentRequestsPerCopy.", ic)
	case registered && !pol.TracksConcurrency():
		return fmt.Sprintf("%s's policy tracks %s, not the concurrency that rose: check that metric and its target %s, or track ConcurrentRequestsPerCopy; also ICE events blocking new instances.", ic, pol.Metric, num(pol.Target))
	case registered && copiesWhy != "":
		return fmt.Sprintf("The policy did not scale out: check whether %s was at its max capacity (%d copies; %s), then the policy's alarms (CloudWatch, TargetTracking-*) and cooldowns, the scalable target's suspended state, and ICE events blocking new instances.", ic, pol.Max, copiesWhy)
	case registered:
		return "The policy was below its max capacity and did not scale out: check its alarms (CloudWatch, TargetTracking-*) and cooldowns, the scalable target's suspended state, and ICE events blocking new instances."
	}
	return "Check the scaling policy (registered target, metric ConcurrentRequestsPerCopy / InvocationsPerCopy, target value, cooldowns), the max capacity, and ICE events blocking new instances."
}

// String is the policy as the evidence shows it.
func (p Policy) String() string {
	s := fmt.Sprintf("min %d, max %d copies", p.Min, p.Max)
	if p.Copies >= 0 {
		s += fmt.Sprintf(", %d now", p.Copies)
	}
	if p.Target > 0 {
		return fmt.Sprintf("target %s %s; %s", num(p.Target), p.Metric, s)
	}
	return "no target tracking policy; " + s
}

const (
	causeNoScaleOut = "Autoscaling did not fire"
	causeAtMax      = "Scaled to its max capacity and still over target"
)

// meanOf is the mean of ps within the run.
func meanOf(run episode, ps []model.SamplePair) float64 {
	return meanOr0(&model.SampleStream{Values: ps}, run)
}

// overloadFirst ranks "autoscaling did not fire" on an IC above KV cache saturation or
// engine queueing of the same severity on that IC when the missing copies explain it: the
// saturation began only after autoscaling had had its time to act (ScalingOverload, and a
// step more: the windows are known to a step), or it came from more requests of the usual
// size (Finding.fromLoad) and did not begin before the overload. Saturation that began
// earlier, or with requests that changed (longer contexts, an engine holding requests back),
// has its own cause and stays first.
func (e *env) overloadFirst(fs []Finding) {
	for i := range fs {
		if fs[i].Cause != causeNoScaleOut && fs[i].Cause != causeAtMax {
			continue
		}
		for _, c := range fs {
			if (c.Rule != "kv-cache-saturation" && c.Rule != "engine-queueing") || c.Target.Level != fs[i].Target.Level ||
				c.Target.Name != fs[i].Target.Name || c.Severity != fs[i].Severity {
				continue
			}
			late := !c.began.Before(fs[i].began.Add(e.cfg.ScalingOverload + e.step))
			withLoad := c.fromLoad && !c.began.Before(fs[i].began.Add(-e.step))
			if late || withLoad {
				// Just above it: the order changes, the rest of the ranking does not.
				fs[i].Score = max(fs[i].Score, c.Score+0.01)
			}
		}
	}
}

// slowScaleOuts reports scale-outs slower than SlowScaling not tied to a visible overload.
func (e *env) slowScaleOuts(d *scalingData, reported map[string]bool) []Finding {
	var out []Finding
	for name, evs := range d.scaleOuts {
		ep := d.eventEndpoint[name]
		if reported[name] || (e.scope.Endpoint != "" && ep != e.scope.Endpoint) {
			continue
		}
		var worst *scaleEvent
		for i := range evs {
			if worst == nil || evs[i].dur > worst.dur {
				worst = &evs[i]
			}
		}
		if worst == nil || worst.dur < slowScalingAfter.Seconds() {
			continue
		}
		t := Target{Level: LevelIC, Name: name, Endpoint: ep, InferenceComponent: name}
		if name == ep {
			t = Target{Level: LevelEndpoint, Name: name, Endpoint: name}
		}
		out = append(out, slowScaling(t, name, time.Duration(worst.dur*float64(time.Second)), []Evidence{
			{What: "slowest scale-out (e2e_duration)", Value: fmt.Sprintf("%s at %s", secs(worst.dur), e.clock(worst.at)), Query: d.eventsQuery},
		}))
	}
	return out
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
