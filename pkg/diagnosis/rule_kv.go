package diagnosis

import (
	"context"
	"fmt"
	"time"

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

// engineQueueExpr: per endpoint/IC over time, the worst copy's waiting and running requests,
// in one request (tagged "waiting" and "running").
func (e *env) engineQueueExpr() string {
	avg := func(p px.EnginePair) string {
		return p.Each(func(m string) string {
			return fmt.Sprintf("max %s (avg_over_time(%s[%s]))", px.By(lEP, lIC), e.eng(m), promDur(e.window))
		})
	}
	return tagged([2]string{"waiting", avg(px.Waiting)}, [2]string{"running", avg(px.Running)})
}

// engineQueue is what engineQueueExpr returns, by key() and signal. It is read from
// usualFrom, like the KV usage: whether a saturation came from more requests than usual is
// judged against the copies' usual level.
type engineQueue struct {
	query            string
	waiting, running map[string]*model.SampleStream
}

func (e *env) engineQueue(ctx context.Context) (engineQueue, error) {
	q := engineQueue{query: e.engineQueueExpr(), waiting: map[string]*model.SampleStream{}, running: map[string]*model.SampleStream{}}
	m, err := e.matrixFrom(ctx, q.query, e.usualFrom())
	if err != nil {
		return q, err
	}
	for _, s := range m {
		switch label(s.Metric, tagLabel) {
		case "waiting":
			q.waiting[key(s.Metric)] = s
		case "running":
			q.running[key(s.Metric)] = s
		}
	}
	return q, nil
}

// preemptExpr: per endpoint/IC, preemptions (vLLM counter) or the most retracted requests
// at once (SGLang gauge) over the range.
func (e *env) preemptExpr() string {
	return fmt.Sprintf("sum %s (increase(%s[%s])) or sum %s (max_over_time(%s[%s]))",
		px.By(lEP, lIC), e.eng(px.Preemptions.VLLM), e.rng(),
		px.By(lEP, lIC), e.eng(px.Preemptions.SGLang), e.rng())
}

// kvSaturation finds, per endpoint/IC key, the longest window of KV usage at saturation in
// the range: sustained, or shorter with requests waiting in it. The engine-queueing rule
// reads it too (same queries, sent once) to leave saturated copies to this rule. The usage
// is read from usualFrom: its usual share per running request (fromLoad) includes what came
// just before the range.
func (e *env) kvSaturation(ctx context.Context) (model.Matrix, engineQueue, map[string]episode, error) {
	kv, err := e.matrixFrom(ctx, e.kvExpr(), e.usualFrom())
	if err != nil {
		return nil, engineQueue{}, nil, err
	}
	queue, err := e.engineQueue(ctx)
	if err != nil {
		return nil, queue, nil, err
	}
	out := make(map[string]episode, len(kv))
	for _, s := range kv {
		k := key(s.Metric)
		ep := longestRun(inRange(s.Values, e.start), false, func(v float64) bool { return v >= e.cfg.KVSaturation })
		if ep.qualifies(e, sustain, meanOr0(queue.waiting[k], ep) >= e.cfg.WaitingRequests) {
			out[k] = ep
		}
	}
	return kv, queue, out, nil
}

// runKV: KV usage at saturation for a sustained window, confirmed by waiting requests or
// preemptions, is the engine running out of cache slots; usage at the early-warning level
// for most of the range is where an autoscaling trigger belongs.
func runKV(ctx context.Context, e *env) ([]Finding, error) {
	kvQuery, preemptQuery := e.kvExpr(), e.preemptExpr()
	kv, queue, saturated, err := e.kvSaturation(ctx)
	if err != nil || len(kv) == 0 {
		return nil, err
	}
	preemptVector, err := e.instant(ctx, preemptQuery)
	if err != nil {
		return nil, err
	}
	preempt := byKey(preemptVector)
	var out []Finding
	for _, s := range kv {
		t := icOrEndpoint(s.Metric)
		k := key(s.Metric)
		ep, ok := saturated[k]
		if !ok {
			if f, warm := e.kvWarm(inRange(s.Values, e.start), t, kvQuery); warm {
				out = append(out, f)
			}
			continue
		}
		w := meanOr0(queue.waiting[k], ep)
		p := preempt[k]
		sev := Warning
		if w >= e.cfg.WaitingRequests || p > 0 {
			sev = Critical
		}
		load, fromLoad := e.fromLoad(queue, s, k, ep, kvQuery)
		out = append(out, Finding{
			Cause: "KV cache saturation", Target: t, Severity: sev, Score: strength(ep.peak, e.cfg.KVSaturation, 1) + strength(w, 0, 50)/10,
			Summary: fmt.Sprintf("KV cache of %s was at %s or more %s (%s, peak %s); %s requests waited on average and %s were preempted",
				t.Name, pct(e.cfg.KVSaturation), ep.when(e), fmtDur(ep.lasting(e)), pct(ep.peak), num1(w), count(p)),
			Evidence: append([]Evidence{
				{What: "KV cache usage at saturation (worst copy)", Value: fmt.Sprintf("%s, %s, peak %s", ep.when(e), fmtDur(ep.lasting(e)), pct(ep.peak)), Query: kvQuery},
				{What: "waiting requests in that window (average, worst copy)", Value: num1(w), Query: queue.query},
				{What: "preemptions / retracted requests over the range", Value: count(p), Query: preemptQuery},
			}, load...),
			Next:     "Add copies or instances (scale on KV cache usage), lower max_num_seqs / max model length, or use a larger-memory instance; check prompt lengths.",
			began:    ep.from,
			fromLoad: fromLoad,
		})
	}
	return out, nil
}

// kvWarm is the info finding for KV usage at the early-warning level for most of the range.
func (e *env) kvWarm(ps []model.SamplePair, t Target, query string) (Finding, bool) {
	u := quantile(values(&model.SampleStream{Values: ps}), 1-e.cfg.KVQuantile)
	if !finite(u) || u < kvEarlyWarning {
		return Finding{}, false
	}
	return Finding{
		Cause: "KV cache running warm", Target: t, Severity: Info, Score: strength(u, kvEarlyWarning, e.cfg.KVSaturation),
		Summary:  fmt.Sprintf("KV cache of %s stays at %s or more for most of the range", t.Name, pct(u)),
		Evidence: []Evidence{{What: fmt.Sprintf("KV cache usage exceeded %.0f%% of the time (worst copy)", 100*e.cfg.KVQuantile), Value: pct(u), Query: query}},
		Next:     "Set an autoscaling trigger on KV cache usage near this level before users feel queueing.",
	}, true
}

// usualSteps is how many steps before the range the KV usage and running requests are read:
// a saturation window that opens the range still has a usual level to compare with, and the
// queries grow by a few points only (a 6-hour look-back doubled them on a 6-hour range).
const usualSteps = 10

func (e *env) usualFrom() time.Time { return e.start.Add(-usualSteps * e.step) }

// fromLoad tells whether a saturation window on key k came from more requests of the usual
// size, which more copies would have absorbed: the worst copy ran at least ScalingRise × its
// usual requests at once, each holding its usual share of the KV cache (within
// FootprintRatio). Saturation with its own cause looks different: longer contexts fill the
// cache with as many requests as usual or fewer, and an engine limit holds requests back
// while fewer run. Usual is the median outside the window, the look-back before the range
// included; without two points there, it cannot tell. The evidence shows the comparison.
func (e *env) fromLoad(q engineQueue, kv *model.SampleStream, k string, ep episode, kvQuery string) ([]Evidence, bool) {
	running := q.running[k]
	if running == nil || kv == nil {
		return nil, false
	}
	kvAt := make(map[model.Time]float64, len(kv.Values))
	for _, p := range kv.Values {
		kvAt[p.Timestamp] = float64(p.Value)
	}
	var runIn, runOut, sizeIn, sizeOut []float64
	for _, p := range running.Values {
		r := float64(p.Value)
		if !finite(r) {
			continue
		}
		t := p.Timestamp.Time()
		inside := !t.Before(ep.from) && !t.After(ep.to)
		size, ok := kvAt[p.Timestamp]
		ok = ok && finite(size) && r >= 1
		switch {
		case inside:
			runIn = append(runIn, r)
			if ok {
				sizeIn = append(sizeIn, size/r)
			}
		default:
			runOut = append(runOut, r)
			if ok {
				sizeOut = append(sizeOut, size/r)
			}
		}
	}
	if len(runIn) == 0 || len(runOut) < 2 || len(sizeIn) == 0 || len(sizeOut) < 2 {
		return nil, false
	}
	usualRun, nowRun := quantile(runOut, 0.5), quantile(runIn, 0.5)
	usualSize, nowSize := quantile(sizeOut, 0.5), quantile(sizeIn, 0.5)
	ev := []Evidence{
		{What: "requests running at once (worst copy), usual → in that window", Value: num1(usualRun) + " → " + num1(nowRun), Query: q.query},
		{What: "KV cache per running request, usual → in that window", Value: pctPts(100*usualSize) + " → " + pctPts(100*nowSize), Query: kvQuery},
	}
	ratio := nowSize / usualSize
	return ev, nowRun >= e.cfg.ScalingRise*max(usualRun, 1) && usualSize > 0 && ratio <= footprintRatio && ratio >= 1/footprintRatio
}
