package diagnosis

import (
	"context"
	"fmt"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
)

// kvExpr: per endpoint/IC over time, the worst copy's KV cache usage (its latest sample
// within the gauge window: no gaps with a coarse publish period, no smoothing of the onset).
func (e *env) kvExpr() string {
	return px.KVUsage.Each(func(m string) string {
		return fmt.Sprintf("max %s (last_over_time(%s[%s]))", px.By(lEP, lIC), e.eng(m), promDur(e.window))
	})
}

// waitingExpr: per endpoint/IC over time, the worst copy's waiting requests.
func (e *env) waitingExpr() string {
	return px.Waiting.Each(func(m string) string {
		return fmt.Sprintf("max %s (avg_over_time(%s[%s]))", px.By(lEP, lIC), e.eng(m), promDur(e.window))
	})
}

// preemptExpr: per endpoint/IC, preemptions (vLLM counter) or the most retracted requests
// at once (SGLang gauge) over the range.
func (e *env) preemptExpr() string {
	return fmt.Sprintf("sum %s (increase(%s[%s])) or sum %s (max_over_time(%s[%s]))",
		px.By(lEP, lIC), e.eng(px.Preemptions.VLLM), e.rng(),
		px.By(lEP, lIC), e.eng(px.Preemptions.SGLang), e.rng())
}

// kvSaturation finds, per endpoint/IC key, the longest window of KV usage at saturation.
// The engine-queueing rule reads it too (same query, sent once) to leave saturated copies
// to this rule.
func (e *env) kvSaturation(ctx context.Context) (model.Matrix, map[string]episode, error) {
	kv, err := e.matrix(ctx, e.kvExpr())
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]episode, len(kv))
	for _, s := range kv {
		if ep := longestRun(s.Values, false, func(v float64) bool { return v >= e.cfg.KVSaturation }); ep.sustained(e, e.cfg.Sustain) {
			out[key(s.Metric)] = ep
		}
	}
	return kv, out, nil
}

// runKV: KV usage at saturation for a sustained window, confirmed by waiting requests or
// preemptions, is the engine running out of cache slots; usage at the early-warning level
// for most of the range is where an autoscaling trigger belongs.
func runKV(ctx context.Context, e *env) ([]Finding, error) {
	kvQuery, waitQuery, preemptQuery := e.kvExpr(), e.waitingExpr(), e.preemptExpr()
	kv, saturated, err := e.kvSaturation(ctx)
	if err != nil || len(kv) == 0 {
		return nil, err
	}
	waitMatrix, err := e.matrix(ctx, waitQuery)
	if err != nil {
		return nil, err
	}
	preemptVector, err := e.instant(ctx, preemptQuery)
	if err != nil {
		return nil, err
	}
	waiting := byKeySeries(waitMatrix)
	preempt := byKey(preemptVector)
	var out []Finding
	for _, s := range kv {
		t := icOrEndpoint(s.Metric)
		k := key(s.Metric)
		ep, ok := saturated[k]
		if !ok {
			if f, warm := e.kvWarm(s, t, kvQuery); warm {
				out = append(out, f)
			}
			continue
		}
		w := meanOr0(waiting[k], ep)
		p := preempt[k]
		sev := Warning
		if w >= e.cfg.WaitingRequests || p > 0 {
			sev = Critical
		}
		out = append(out, Finding{
			Cause: "KV cache saturation", Target: t, Severity: sev, Score: strength(ep.peak, e.cfg.KVSaturation, 1) + strength(w, 0, 50)/10,
			Summary: fmt.Sprintf("KV cache of %s was at %s or more %s (%s, peak %s); %s requests waited on average and %s were preempted",
				t.Name, pct(e.cfg.KVSaturation), ep.when(e), fmtDur(ep.lasting(e)), pct(ep.peak), num1(w), count(p)),
			Evidence: []Evidence{
				{What: "KV cache usage at saturation (worst copy)", Value: fmt.Sprintf("%s, %s, peak %s", ep.when(e), fmtDur(ep.lasting(e)), pct(ep.peak)), Query: kvQuery},
				{What: "waiting requests in that window (average, worst copy)", Value: num1(w), Query: waitQuery},
				{What: "preemptions / retracted requests over the range", Value: count(p), Query: preemptQuery},
			},
			Next:  "Add copies or instances (scale on KV cache usage), lower max_num_seqs / max model length, or use a larger-memory instance; check prompt lengths.",
			began: ep.from,
		})
	}
	return out, nil
}

// kvWarm is the info finding for KV usage at the early-warning level for most of the range.
func (e *env) kvWarm(s *model.SampleStream, t Target, query string) (Finding, bool) {
	u := quantile(values(s), 1-e.cfg.KVQuantile)
	if !finite(u) || u < e.cfg.KVEarlyWarning {
		return Finding{}, false
	}
	return Finding{
		Cause: "KV cache running warm", Target: t, Severity: Info, Score: strength(u, e.cfg.KVEarlyWarning, e.cfg.KVSaturation),
		Summary:  fmt.Sprintf("KV cache of %s stays at %s or more for most of the range", t.Name, pct(u)),
		Evidence: []Evidence{{What: fmt.Sprintf("KV cache usage exceeded %.0f%% of the time (worst copy)", 100*e.cfg.KVQuantile), Value: pct(u), Query: query}},
		Next:     "Set an autoscaling trigger on KV cache usage near this level before users feel queueing.",
	}, true
}
