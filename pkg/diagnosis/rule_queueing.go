package diagnosis

import (
	"context"
	"fmt"
	"time"

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

// runQueueing: TTFT that is high or rising while the platform's model and overhead latency
// stay flat means requests wait inside the engine's own queue. When the KV cache of the same
// copy is saturated the KV rule already names the cause, so it is not repeated here.
func runQueueing(ctx context.Context, e *env) ([]Finding, error) {
	tq := e.ttftExpr()
	tm, err := e.matrix(ctx, tq)
	if err != nil || len(tm) == 0 {
		return nil, err
	}
	kvQ, waitQ, lq := e.kvExpr(), e.waitingExpr(), e.latencyExpr()
	kvv, err := e.instant(ctx, kvQ)
	if err != nil {
		return nil, err
	}
	wv, err := e.instant(ctx, waitQ)
	if err != nil {
		return nil, err
	}
	lm, err := e.matrix(ctx, lq)
	if err != nil {
		return nil, err
	}
	kv, waiting := byKey(kvv), byKey(wv)
	type lat struct{ usual, peak float64 }
	lats := map[string]map[string]lat{} // endpoint or IC name -> model|overhead
	for _, s := range lm {
		name := label(s.Metric, semconv.DimEndpointName) + label(s.Metric, semconv.DimInferenceComponentName)
		if lats[name] == nil {
			lats[name] = map[string]lat{}
		}
		u, p := usualPeak(values(s))
		lats[name][label(s.Metric, tagLabel)] = lat{u, p}
	}
	high, floor := e.cfg.TTFTHigh.Seconds(), e.cfg.TTFTMin.Seconds()
	var out []Finding
	for _, s := range tm {
		xs := values(s)
		if len(xs) == 0 {
			continue
		}
		usual, peak := usualPeak(xs)
		up := peak >= high || (peak >= floor && usual > 0 && peak/usual >= e.cfg.TTFTRiseRatio)
		k := key(s.Metric)
		if !up || kv[k] >= e.cfg.KVSaturation {
			continue
		}
		t := icOrEndpoint(s.Metric)
		name := t.Name
		if _, ok := lats[name]; !ok {
			name = t.Endpoint // no per-IC latency published: judge on the endpoint's
		}
		ml, okM := lats[name]["model"]
		ol, okO := lats[name]["overhead"]
		normal := func(l lat, ok bool) bool { return ok && (l.usual <= 0 || l.peak/l.usual < e.cfg.LatencyNormal) }
		if (okM && !normal(ml, okM)) || (okO && !normal(ol, okO)) {
			continue // the platform or the model itself slowed down: not engine queueing
		}
		w := waiting[k]
		sev := Warning
		if peak >= high && w >= e.cfg.WaitingRequests {
			sev = Critical
		}
		ev := []Evidence{
			{What: "TTFT P99 usual → peak", Value: secs(usual) + " → " + secs(peak), Query: tq},
			{What: "waiting requests (average, worst copy)", Value: num1(w), Query: waitQ},
			{What: "KV cache usage (sustained)", Value: pct(kv[k]), Query: kvQ},
		}
		latNote := "model and overhead latency not published for this scope"
		if okM || okO {
			ev = append(ev,
				Evidence{What: "ModelLatency P99 usual → peak", Value: usec(ml.usual) + " → " + usec(ml.peak), Query: lq},
				Evidence{What: "OverheadLatency P99 usual → peak", Value: usec(ol.usual) + " → " + usec(ol.peak), Query: lq})
			latNote = "model and overhead latency stay flat"
		}
		out = append(out, Finding{
			Cause: "Engine queueing", Target: t, Severity: sev, Score: strength(peak/max(usual, 1e-3), 1, 20),
			Summary:  fmt.Sprintf("TTFT P99 of %s rose to %s (usually %s) while %s: requests wait in the engine's queue (%s waiting)", t.Name, secs(peak), secs(usual), latNote, num1(w)),
			Evidence: ev,
			Next:     "Raise the engine's concurrency (max_num_seqs / max batch size) if GPU memory allows, add copies, or lower the per-copy concurrency target so scaling starts earlier.",
		})
	}
	return out, nil
}

// usec formats a latency published in microseconds.
func usec(v float64) string {
	if !finite(v) {
		return "n/a"
	}
	return fmtDur(time.Duration(v * float64(time.Microsecond)))
}
