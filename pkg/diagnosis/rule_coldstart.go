package diagnosis

import (
	"context"
	"fmt"
	"maps"
	"slices"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// coldPhases are the cold start phases with their advice (insights-layout.md, Reliability 3).
var coldPhases = []struct{ tag, metric, name, advice string }{
	{"download", semconv.ModelDownloadTime, "model download", "Compress the model artifacts, keep them in the same region, or cache them on the instance (faster storage, pre-fetched weights)."},
	{"gpu_load", semconv.GPULoadTime, "GPU load", "Load fewer bytes: a smaller quantisation or fewer shards; warm up the engine ahead of traffic."},
	{"container", semconv.ContainerStartTime, "container start", "Slim the container: fewer dependencies, a smaller image, a lighter health check path."},
}

// coldStartExpr: the average duration of each phase and of the whole cold start per
// endpoint/IC over the range, in one request (events are sparse samples at event time).
func (e *env) coldStartExpr() string {
	f := func(m string) string {
		return fmt.Sprintf("max %s (avg_over_time(%s[%s]))", px.By(lEP, lIC), e.eng(m), e.rng())
	}
	parts := make([][2]string, 0, len(coldPhases)+1)
	for _, p := range coldPhases {
		parts = append(parts, [2]string{p.tag, f(p.metric)})
	}
	parts = append(parts, [2]string{"total", f(semconv.ColdStartDuration)})
	return tagged(parts...)
}

// runColdStart: a cold start longer than ColdStartSlow, with one phase holding at least
// ColdStartShare of it, gets that phase's advice.
func runColdStart(ctx context.Context, e *env) ([]Finding, error) {
	q := e.coldStartExpr()
	v, err := e.instant(ctx, q)
	if err != nil {
		return nil, err
	}
	type ic struct {
		t      Target
		phases map[string]float64
	}
	ics := map[string]*ic{}
	for _, s := range v {
		x := float64(s.Value)
		if !finite(x) || x < 0 {
			continue
		}
		k := key(s.Metric)
		if ics[k] == nil {
			ics[k] = &ic{t: icOrEndpoint(s.Metric), phases: map[string]float64{}}
		}
		ics[k].phases[label(s.Metric, tagLabel)] = x
	}
	keys := slices.Sorted(maps.Keys(ics))
	var out []Finding
	for _, k := range keys {
		c := ics[k]
		sum, dom := 0.0, -1
		for i, p := range coldPhases {
			d := c.phases[p.tag]
			sum += d
			if dom < 0 || d > c.phases[coldPhases[dom].tag] {
				dom = i
			}
		}
		total := max(c.phases["total"], sum)
		if total < e.cfg.ColdStartSlow.Seconds() || sum <= 0 {
			continue
		}
		p := coldPhases[dom]
		share := c.phases[p.tag] / total
		ev := []Evidence{{What: "cold start (average over the range)", Value: secs(total), Query: q}}
		for _, ph := range coldPhases {
			ev = append(ev, Evidence{What: ph.name, Value: fmt.Sprintf("%s (%s)", secs(c.phases[ph.tag]), pct(c.phases[ph.tag]/total)), Query: q})
		}
		f := Finding{Target: c.t, Severity: Warning, Score: strength(total, e.cfg.ColdStartSlow.Seconds(), 900), Evidence: ev}
		if share >= coldStartShare {
			f.Cause = "Slow cold start dominated by " + p.name
			f.Summary = fmt.Sprintf("Cold starts of %s take %s, %s of it in %s", c.t.Name, secs(total), pct(share), p.name)
			f.Next = p.advice
		} else {
			f.Cause = "Slow cold start"
			f.Summary = fmt.Sprintf("Cold starts of %s take %s with no single dominant phase (largest: %s, %s)", c.t.Name, secs(total), p.name, pct(share))
			f.Next = "Work on the largest phases together; keep warm capacity so scale-out does not wait on cold starts."
		}
		out = append(out, f)
	}
	return out, nil
}
