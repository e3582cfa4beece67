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

// fbExpr: framebuffer used % per instance and IC (DCGM series carry the IC owning the GPU),
// so a leak or a crash of one model shows on its own GPUs, one GPU at a time: on an IC's
// GPUs the least used (one copy that dies among several on an instance falls to zero, not by
// a quarter), on the other GPUs the most used (a single-model copy on one GPU of eight; the
// idle ones stay near zero). GPUs owned by an IC and the others are two queries, so each
// stays under the series limit on large fleets (200 instances × 8 GPUs: 300 + 200 series
// instead of 500 in one).
func (e *env) fbExpr(owned bool) string {
	icMatch, op := px.Eq(lIC, ""), "max"
	if owned {
		icMatch, op = px.Neq(lIC, ""), "min"
	}
	used, free := e.eng(semconv.DCGMFBUsed, icMatch), e.eng(semconv.DCGMFBFree, icMatch)
	return fmt.Sprintf("100 * %s %s (%s / (%s + %s))", op, px.By(lEP, lIC, lHost), used, used, free)
}

// fbSeries is one instance × IC framebuffer series and the query that returned it.
type fbSeries struct {
	*model.SampleStream
	query string
}

// fbMatrix reads fbExpr over the range plus VRAMDropWithin before it, so a drop at the range's
// start still has its "before"; both GPU memory rules share these requests.
func (e *env) fbMatrix(ctx context.Context) ([]fbSeries, error) {
	kinds := []bool{true, false}
	if e.scope.InferenceComponent != "" {
		kinds = kinds[:1] // an IC's GPUs are all owned
	}
	var out []fbSeries
	for _, owned := range kinds {
		q := e.fbExpr(owned)
		m, err := e.matrixFrom(ctx, q, e.start.Add(-e.cfg.VRAMDropWithin-e.step))
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			out = append(out, fbSeries{s, q})
		}
	}
	return out, nil
}

func instanceTarget(m model.Metric) Target {
	h := label(m, lHost)
	return Target{Level: LevelInstance, Name: h, Endpoint: label(m, lEP), InferenceComponent: label(m, lIC), Instance: h}
}

// gpusOf names the GPUs a finding judged: an instance's, or those an IC owns on it (an
// instance hosting two ICs' copies gets a finding for each, which must read differently).
func gpusOf(t Target) string {
	if t.InferenceComponent == "" {
		return t.Name
	}
	return t.Name + " (the GPUs of " + t.InferenceComponent + ")"
}

// runGPUMemory: VRAM that rises steadily (a good linear fit, a large rise) will fill up, and
// the time to full sets the severity; VRAM that is already nearly full leaves no headroom.
func runGPUMemory(ctx context.Context, e *env) ([]Finding, error) {
	m, err := e.fbMatrix(ctx)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, s := range m {
		q := s.query
		xs := values(s.SampleStream)
		if len(xs) < 3 {
			continue
		}
		t := instanceTarget(s.Metric)
		now := tail(xs, 0.05)
		slope, r2, _ := linearFit(s.SampleStream)
		rise := slope * s.Values[len(s.Values)-1].Timestamp.Sub(s.Values[0].Timestamp).Hours()
		ttf := time.Duration(math.Max(0, 100-now) / slope * float64(time.Hour))
		// A large rise is a leak whatever the headroom; a small one only when it will fill
		// the GPU soon (a short range sees a slow leak's last part only).
		leak := rise >= vramGrowthPct || (rise >= vramCreepPct && ttf <= e.cfg.TimeToFullCrit)
		if finite(slope) && slope > 0 && leak && r2 >= vramGrowthR2 {
			sev := Warning
			if ttf <= e.cfg.TimeToFullCrit {
				sev = Critical
			}
			out = append(out, Finding{
				Cause: "Steady GPU memory growth", Target: t, Severity: sev,
				Score:   1 - strength(ttf.Hours(), 0, 7*24),
				Summary: fmt.Sprintf("GPU memory of %s rose from %s to %s (%s per hour, fit R²=%.2f); full in about %s", gpusOf(t), pctPts(xs[0]), pctPts(now), pctPts(slope), r2, fmtDur(ttf)),
				Evidence: []Evidence{
					{What: "framebuffer used now", Value: pctPts(now), Query: q},
					{What: "growth (linear fit over the range)", Value: fmt.Sprintf("%s/h, R²=%.2f", pctPts(slope), r2), Query: q},
					{What: "time to full at this rate", Value: fmtDur(ttf), Query: q},
				},
				Next: "Look for a memory leak in the model server (growing caches, fragmentation); restart or replace the copy before it fills, and add instances first if it is load-driven.",
			})
			continue
		}
		if now >= e.cfg.GPUMemWarnPct {
			sev := Warning
			if now >= gpuMemCritPct {
				sev = Critical
			}
			out = append(out, Finding{
				Cause: "GPU memory pressure", Target: t, Severity: sev, Score: strength(now, e.cfg.GPUMemWarnPct, 100),
				Summary:  fmt.Sprintf("GPU memory of %s is at %s: no headroom for another model's weights or larger batches", gpusOf(t), pctPts(now)),
				Evidence: []Evidence{{What: "framebuffer used now", Value: pctPts(now), Query: q}},
				Next:     "Move a copy elsewhere or add instances; lower gpu_memory_utilization / max model length if the engine reserves too much.",
			})
		}
	}
	return out, nil
}
