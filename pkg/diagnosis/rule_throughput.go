package diagnosis

import (
	"context"
	"fmt"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// tokensExpr: output tokens per second per endpoint/IC over time.
func (e *env) tokensExpr() string {
	return px.GenerationTokens.Each(func(m string) string {
		return fmt.Sprintf("sum %s (rate(%s[%s]))", px.By(lEP, lIC), e.eng(m), promDur(e.window))
	})
}

// icInvocations: invocations per IC, one total per step (delta counts), by IC name.
func (e *env) icInvocations(ctx context.Context) (map[string]*model.SampleStream, string, error) {
	q := fmt.Sprintf("sum %s (sum_over_time(%s[%s]))", px.By(semconv.DimInferenceComponentName), semconv.InvocationsForIC, promDur(e.step))
	m, err := e.matrix(ctx, q)
	if err != nil {
		return nil, q, err
	}
	out := make(map[string]*model.SampleStream, len(m))
	for _, s := range m {
		out[label(s.Metric, semconv.DimInferenceComponentName)] = s
	}
	return out, q, nil
}

// runThroughput: output tokens/s now (the last tenth of the range) far below the engine's own
// peak over the range. When invocations fell as much, demand fell (info); otherwise the engine
// got slower for the same demand (warning).
func runThroughput(ctx context.Context, e *env) ([]Finding, error) {
	q := e.tokensExpr()
	m, err := e.matrix(ctx, q)
	if err != nil || len(m) == 0 {
		return nil, err
	}
	var tr map[string]*traffic
	var icInv map[string]*model.SampleStream
	var trQ, icInvQ string
	var out []Finding
	for _, s := range m {
		xs := values(s)
		if len(xs) < 10 {
			continue
		}
		_, peak := usualPeak(xs)
		now := tail(xs, 0.1)
		if peak < throughputMin || now >= throughputRatio*peak {
			continue
		}
		if tr == nil {
			if tr, trQ, err = e.traffic(ctx); err != nil {
				return nil, err
			}
		}
		t := icOrEndpoint(s.Metric)
		name := t.Endpoint
		if e.scope.InferenceComponent != "" {
			name = t.InferenceComponent
		}
		var inv []float64
		if tt := tr[name]; tt != nil {
			for _, r := range tt.ratios("invocations") {
				inv = append(inv, r.invocs)
			}
		}
		if t.Level == LevelIC && e.scope.InferenceComponent == "" {
			// The IC's own invocations: its endpoint's mix other ICs with other peak hours.
			if icInv == nil {
				if icInv, icInvQ, err = e.icInvocations(ctx); err != nil {
					return nil, err
				}
			}
			if s := icInv[t.InferenceComponent]; s != nil {
				inv, trQ = values(s), icInvQ
			}
		}
		demand := -1.0 // unknown
		if _, p := usualPeak(inv); len(inv) >= 10 && p > 0 {
			demand = tail(inv, 0.1) / p
		}
		ratio := now / peak
		ev := []Evidence{
			{What: "output tokens/s now vs peak over the range", Value: fmt.Sprintf("%s vs %s (%s)", num1(now), num1(peak), pct(ratio)), Query: q},
		}
		f := Finding{Target: t, Score: 1 - ratio, Evidence: ev}
		switch {
		case demand >= 0 && demand <= 2*ratio:
			f.Evidence = append(f.Evidence, Evidence{What: "invocations now vs peak", Value: pct(demand), Query: trQ})
			f.Cause, f.Severity = "Throughput down with demand", Info
			f.Summary = fmt.Sprintf("Output throughput of %s is %s of its peak, and invocations fell to %s of theirs: less demand, not a slower engine", t.Name, pct(ratio), pct(demand))
			f.Next = "Nothing to fix if the drop in traffic is expected; consider scaling in to save cost."
		default:
			if demand >= 0 {
				f.Evidence = append(f.Evidence, Evidence{What: "invocations now vs peak", Value: pct(demand), Query: trQ})
			}
			f.Cause, f.Severity = "Throughput far below the engine's usual level", Warning
			f.Summary = fmt.Sprintf("Output throughput of %s is %s tokens/s, %s of its peak over the range (%s)", t.Name, num1(now), pct(ratio), num1(peak))
			f.Next = "Compare with the engine pressure and GPU panels: KV saturation, preemptions, a crashed or restarting copy, or a new model version with a smaller batch size."
		}
		out = append(out, f)
	}
	return out, nil
}
