package diagnosis

import (
	"context"
	"fmt"
	"maps"
	"slices"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

const lAccount = semconv.LabelAccount

// enrichmentWindow is the end of the range over which busy GPUs and vended series are
// compared: VendedWindow, or the whole range when it is shorter.
func (e *env) enrichmentWindow() string {
	return promDur(min(vendedWindow, e.end.Sub(e.start)))
}

// enrichmentExpr counts, per account, the instances in scope whose GPUs worked, those of them
// whose GPU series carry the endpoint label, and the account's vended Invocations series, in
// one request. Vended series are not narrowed to the scope: enrichment is the account's switch,
// and Invocations carries no inference component.
func (e *env) enrichmentExpr() string {
	w := e.enrichmentWindow()
	busy := func(extra ...string) string {
		return fmt.Sprintf("count %s (max %s (max_over_time(%s[%s])) > 0)", px.By(lAccount), px.By(lAccount, lHost), e.eng(semconv.DCGMGPUUtil, extra...), w)
	}
	return tagged(
		[2]string{"busy", busy()},
		[2]string{"labelled", busy(px.Neq(lEP, ""))},
		[2]string{"vended", fmt.Sprintf("count %s (count_over_time(%s[%s]))", px.By(lAccount), px.Sel(semconv.Invocations), w)},
	)
}

// runEnrichment: GPUs that work in an account that publishes no vended series, or whose GPU
// series name no endpoint, are the account's OTel enrichment switched off. Every rule that
// reads vended metrics or groups by endpoint then has "not enough data"; this names why.
func runEnrichment(ctx context.Context, e *env) ([]Finding, error) {
	q := e.enrichmentExpr()
	v, err := e.instant(ctx, q)
	if err != nil {
		return nil, err
	}
	counts := map[string]map[string]float64{}
	for _, s := range v {
		a := label(s.Metric, lAccount)
		if !finite(float64(s.Value)) {
			continue
		}
		if counts[a] == nil {
			counts[a] = map[string]float64{}
		}
		counts[a][label(s.Metric, tagLabel)] = float64(s.Value)
	}
	accounts := slices.Sorted(maps.Keys(counts))
	var out []Finding
	for _, a := range accounts {
		c := counts[a]
		busy, unlabelled := c["busy"], c["busy"]-c["labelled"]
		if busy == 0 || (c["vended"] > 0 && c["labelled"] > 0) {
			continue
		}
		name := a
		if name == "" {
			name = "(no @aws.account label)"
		}
		missing := "no SageMaker vended metric (Invocations, latencies, errors) arrived"
		if c["vended"] > 0 {
			missing = "none of their GPU series carries the SageMaker labels (" + lEP + ")"
		}
		out = append(out, Finding{
			Cause: "OTel enrichment off: vended metrics and SageMaker labels missing", Target: Target{Level: LevelAccount, Name: name},
			Severity: Warning, Score: strength(busy, 0, 100),
			Summary: fmt.Sprintf("%s instance(s) of account %s have busy GPUs but %s in the last %s: rules that need them have not enough data; turn on %s",
				count(busy), name, missing, e.enrichmentWindow(), semconv.EnrichmentSwitch),
			Evidence: []Evidence{
				{What: "instances with busy GPUs", Value: count(busy), Query: q},
				{What: "of them, GPU series without " + lEP, Value: count(unlabelled), Query: q},
				{What: "vended Invocations series", Value: count(c["vended"]), Query: q},
			},
			Next: "Turn the enrichment on in account " + name + " (both settings); vended metrics and labels arrive 2–3 minutes later.",
		})
	}
	return out, nil
}
