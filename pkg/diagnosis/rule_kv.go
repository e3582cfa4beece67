package diagnosis

import (
	"context"
	"fmt"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
)

// kvExpr: per endpoint/IC, the worst copy's sustained KV cache usage (a time quantile over the
// range, so one brief peak is not saturation).
func (e *env) kvExpr() string {
	return px.KVUsage.Each(func(m string) string {
		return fmt.Sprintf("max %s (quantile_over_time(%v, %s[%s]))", px.By(lEP, lIC), e.cfg.KVQuantile, e.eng(m), e.rng())
	})
}

// waitingExpr: per endpoint/IC, the worst copy's average number of waiting requests.
func (e *env) waitingExpr() string {
	return px.Waiting.Each(func(m string) string {
		return fmt.Sprintf("max %s (avg_over_time(%s[%s]))", px.By(lEP, lIC), e.eng(m), e.rng())
	})
}

// preemptExpr: per endpoint/IC, preemptions (vLLM counter) or the most retracted requests
// at once (SGLang gauge) over the range.
func (e *env) preemptExpr() string {
	return fmt.Sprintf("sum %s (increase(%s[%s])) or sum %s (max_over_time(%s[%s]))",
		px.By(lEP, lIC), e.eng(px.Preemptions.VLLM), e.rng(),
		px.By(lEP, lIC), e.eng(px.Preemptions.SGLang), e.rng())
}

// runKV: sustained KV usage at saturation, confirmed by waiting requests or preemptions, is
// the engine running out of cache slots; sustained usage at the early-warning level is where
// an autoscaling trigger belongs.
func runKV(ctx context.Context, e *env) ([]Finding, error) {
	kvQ, waitQ, preQ := e.kvExpr(), e.waitingExpr(), e.preemptExpr()
	kv, err := e.instant(ctx, kvQ)
	if err != nil {
		return nil, err
	}
	if len(kv) == 0 {
		return nil, nil
	}
	wv, err := e.instant(ctx, waitQ)
	if err != nil {
		return nil, err
	}
	pv, err := e.instant(ctx, preQ)
	if err != nil {
		return nil, err
	}
	waiting, preempt := byKey(wv), byKey(pv)
	var out []Finding
	for _, s := range kv {
		u := float64(s.Value)
		if !finite(u) || u < e.cfg.KVEarlyWarning {
			continue
		}
		t := icOrEndpoint(s.Metric)
		w, p := waiting[key(s.Metric)], preempt[key(s.Metric)]
		ev := []Evidence{{What: fmt.Sprintf("KV cache usage P%v over the range (worst copy)", 100*e.cfg.KVQuantile), Value: pct(u), Query: kvQ}}
		if u < e.cfg.KVSaturation {
			out = append(out, Finding{
				Cause: "KV cache running warm", Target: t, Severity: Info, Score: strength(u, e.cfg.KVEarlyWarning, e.cfg.KVSaturation),
				Summary:  fmt.Sprintf("KV cache of %s stays at %s or more for most of the range", t.Name, pct(u)),
				Evidence: ev,
				Next:     "Set an autoscaling trigger on KV cache usage near this level before users feel queueing.",
			})
			continue
		}
		ev = append(ev,
			Evidence{What: "waiting requests (average, worst copy)", Value: num1(w), Query: waitQ},
			Evidence{What: "preemptions / retracted requests", Value: count(p), Query: preQ})
		sev := Warning
		if w >= e.cfg.WaitingRequests || p > 0 {
			sev = Critical
		}
		out = append(out, Finding{
			Cause: "KV cache saturation", Target: t, Severity: sev, Score: strength(u, e.cfg.KVSaturation, 1) + strength(w, 0, 50)/10,
			Summary:  fmt.Sprintf("KV cache of %s is at %s; %s requests wait on average and %s were preempted", t.Name, pct(u), num1(w), count(p)),
			Evidence: ev,
			Next:     "Add copies or instances (scale on KV cache usage), lower max_num_seqs / max model length, or use a larger-memory instance; check prompt lengths.",
		})
	}
	return out, nil
}
