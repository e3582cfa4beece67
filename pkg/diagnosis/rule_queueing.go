package diagnosis

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// ttftExpr: P99 time to first token per endpoint/IC over time (engine histograms are
// cumulative native histograms, so rate() is right here).
func (e *env) ttftExpr() string {
	return px.TTFT.Each(func(m string) string {
		return fmt.Sprintf("histogram_quantile(0.99, sum %s (rate(%s[%s])))", px.By(lEP, lIC), e.eng(m), promDur(e.window))
	})
}

// latencyExpr: P99 ModelLatency and OverheadLatency over time, per endpoint and per IC (the
// ForIc variants), in one request. They are delta histograms: sum_over_time, never rate.
func (e *env) latencyExpr() string {
	f := func(metric, dim, value string) string {
		s := metric
		if value != "" {
			s = px.Sel(metric, px.Eq(dim, value))
		}
		return fmt.Sprintf("histogram_quantile(0.99, sum %s (sum_over_time(%s[%s])))", px.By(dim), s, promDur(e.window))
	}
	ep, ic := semconv.DimEndpointName, semconv.DimInferenceComponentName
	return tagged(
		[2]string{"model", f(semconv.ModelLatency, ep, e.scope.Endpoint)},
		[2]string{"overhead", f(semconv.OverheadLatency, ep, e.scope.Endpoint)},
		[2]string{"model", f(semconv.ModelLatencyForIC, ic, e.scope.InferenceComponent)},
		[2]string{"overhead", f(semconv.OverheadLatencyForIC, ic, e.scope.InferenceComponent)},
	)
}

// runQueueing: TTFT that stays high or well above its usual level for a sustained window (or
// high for the fast window with requests waiting) while the platform's model and overhead latency stay flat means requests wait inside the
// engine's own queue. When the KV cache of the same copy is saturated the KV rule already
// names the cause, so it is not repeated here.
func runQueueing(ctx context.Context, e *env) ([]Finding, error) {
	ttftQuery := e.ttftExpr()
	ttft, err := e.matrix(ctx, ttftQuery)
	if err != nil || len(ttft) == 0 {
		return nil, err
	}
	latQuery := e.latencyExpr()
	kvMatrix, queue, saturated, err := e.kvSaturation(ctx)
	if err != nil {
		return nil, err
	}
	latMatrix, err := e.matrix(ctx, latQuery)
	if err != nil {
		return nil, err
	}
	kv := byKeySeries(kvMatrix)
	lats := map[string]map[string]*model.SampleStream{} // endpoint or IC name -> model|overhead
	for _, s := range latMatrix {
		name := label(s.Metric, semconv.DimEndpointName) + label(s.Metric, semconv.DimInferenceComponentName)
		if lats[name] == nil {
			lats[name] = map[string]*model.SampleStream{}
		}
		lats[name][label(s.Metric, tagLabel)] = s
	}
	high, floor := e.cfg.TTFTHigh.Seconds(), ttftMin.Seconds()
	var out []Finding
	for _, s := range ttft {
		k := key(s.Metric)
		if _, ok := saturated[k]; ok {
			continue
		}
		usual := quantile(values(s), 0.25)
		limit := high
		if finite(usual) {
			limit = min(high, max(floor, ttftRiseRatio*usual))
		}
		ep := longestRun(s.Values, false, func(v float64) bool { return v >= limit })
		w := meanOr0(queue.waiting[k], ep)
		if !ep.qualifies(e, sustain, ep.peak >= high && w >= e.cfg.WaitingRequests) {
			continue
		}
		t := icOrEndpoint(s.Metric)
		name := t.Name
		if _, ok := lats[name]; !ok {
			name = t.Endpoint // no per-IC latency published: judge on the endpoint's
		}
		modelLat, modelOK := latencyIn(lats[name]["model"], ep)
		overheadLat, overheadOK := latencyIn(lats[name]["overhead"], ep)
		if !modelLat.normal(e) || !overheadLat.normal(e) {
			continue // the platform or the model itself slowed down: not engine queueing
		}
		kvPeak := maxOr0(kv[k], ep)
		sev := Warning
		if ep.peak >= high && w >= e.cfg.WaitingRequests {
			sev = Critical
		}
		ev := []Evidence{
			{What: "TTFT P99 usual → peak", Value: fmt.Sprintf("%s → %s, above %s %s (%s)", secs(usual), secs(ep.peak), secs(limit), ep.when(e), fmtDur(ep.lasting(e))), Query: ttftQuery},
			{What: "waiting requests in that window (average, worst copy)", Value: num1(w), Query: queue.query},
			{What: "KV cache usage in that window (peak, worst copy)", Value: pct(kvPeak), Query: e.kvExpr()},
		}
		latNote := "model and overhead latency not published for this scope"
		if modelOK || overheadOK {
			ev = append(ev,
				Evidence{What: "ModelLatency P99 usual → peak in that window", Value: usec(modelLat.usual) + " → " + usec(modelLat.peak), Query: latQuery},
				Evidence{What: "OverheadLatency P99 usual → peak in that window", Value: usec(overheadLat.usual) + " → " + usec(overheadLat.peak), Query: latQuery})
			latNote = "model and overhead latency stay flat"
		}
		load, fromLoad := e.fromLoad(queue, kv[k], k, ep, e.kvExpr())
		// A copy that queues while running at least the concurrency its scaling policy
		// targets per copy is full: more copies are the fix. One that queues while running
		// fewer is held back by its own engine limit (a low max running requests), however its
		// few running compare with a quiet usual. Without a known target it cannot tell.
		target, known := e.policyTarget(ctx, t.Name)
		fromLoad = fromLoad && known && meanOr0(queue.running[k], ep) >= target
		ev = append(ev, load...)
		out = append(out, Finding{
			Cause: "Engine queueing", Target: t, Severity: sev, Score: strength(ep.peak/max(usual, 1e-3), 1, 20),
			Summary: fmt.Sprintf("TTFT P99 of %s rose to %s (usually %s) %s while %s: requests wait in the engine's queue (%s waiting)",
				t.Name, secs(ep.peak), secs(usual), ep.when(e), latNote, num1(w)),
			Evidence: ev,
			Next:     "Raise the engine's concurrency (max_num_seqs / max batch size) if GPU memory allows, add copies, or lower the per-copy concurrency target so scaling starts earlier.",
			began:    ep.from,
			fromLoad: fromLoad,
		})
	}
	return out, nil
}

// latency is a platform latency's usual level (median over the range) and its peak inside an
// incident window.
type latency struct{ usual, peak float64 }

func latencyIn(s *model.SampleStream, ep episode) (latency, bool) {
	if s == nil {
		return latency{math.NaN(), math.NaN()}, false
	}
	in := within(s, ep.from, ep.to)
	if len(in) == 0 {
		return latency{quantile(values(s), 0.5), math.NaN()}, true
	}
	return latency{quantile(values(s), 0.5), quantile(in, 0.9)}, true
}

// normal: unknown, or its peak stays below LatencyNormal × usual.
func (l latency) normal(e *env) bool {
	return !finite(l.peak) || !(l.usual > 0) || l.peak/l.usual < e.cfg.LatencyNormal
}

// usec formats a latency published in microseconds.
func usec(v float64) string {
	if !finite(v) {
		return "n/a"
	}
	return fmtDur(time.Duration(v * float64(time.Microsecond)))
}
