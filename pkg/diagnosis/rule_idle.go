package diagnosis

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/cost"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
)

const idleRuleID = "idle-capacity"

// boundPrices looks prices up in the env's one region.
type boundPrices func(string) (pricing.Price, error)

func (b boundPrices) Lookup(_, instanceType string) (pricing.Price, error) { return b(instanceType) }

// idleInput reads the cost query's inputs over the range (pkg/cost's PromQL, narrowed to
// the scope) for pkg/cost's arithmetic.
func (e *env) idleInput(ctx context.Context) (cost.Input, cost.Exprs, error) {
	// The component scope narrows whose GPUs are read, not the instances' GPU totals.
	var instance, holder []string
	if e.scope.Endpoint != "" {
		instance = append(instance, px.Eq(lEP, e.scope.Endpoint))
	}
	if e.scope.InferenceComponent != "" {
		holder = append(holder, px.Eq(lIC, e.scope.InferenceComponent))
	}
	ex := cost.ExprsFor(e.rng(), e.step, instance, holder)
	start, end := onGrid(e.start, e.end, e.step)
	in := cost.Input{Region: e.region, From: start, To: end, Step: e.step, Prices: boundPrices(e.prices), QuietTokensPerHour: e.cfg.IdleQuietTokensPerHour}
	in, err := cost.Read(ctx, in, ex, e.cfg.SeriesLimit, func(ctx context.Context, expr string) (cost.Answer, error) {
		m, err := e.matrix(ctx, expr)
		var a cost.Answer
		for _, s := range m {
			t, n := make([]int64, len(s.Values)), make([]float64, len(s.Values))
			for i, p := range s.Values {
				t[i], n[i] = int64(p.Timestamp), float64(p.Value)
			}
			a.Series = append(a.Series, cost.Series{Labels: labelsOf(s.Metric), T: t, V: n})
		}
		return a, err
	}, func(ctx context.Context, expr string) (cost.Answer, error) {
		v, err := e.instant(ctx, expr)
		var a cost.Answer
		for _, s := range v {
			a.Series = append(a.Series, cost.Series{Labels: labelsOf(s.Metric), T: []int64{int64(s.Timestamp)}, V: []float64{float64(s.Value)}})
		}
		return a, err
	})
	return in, ex, err
}

func labelsOf(m model.Metric) func(string) string {
	return func(n string) string { return label(m, n) }
}

// runIdle: spend on GPUs no copy holds and on copies serving near nothing, per endpoint and
// day, at the instances' prices; info from IdleInfoUSDPerDay, a warning from
// IdleWarnUSDPerDay. A standing condition, not an incident: it ranks below every incident.
// It runs only with prices (rule.priced); a type without a price is left out, with a warning.
func runIdle(ctx context.Context, e *env) ([]Finding, error) {
	in, ex, err := e.idleInput(ctx)
	if err != nil {
		return nil, err
	}
	type endpoint struct {
		perDay, free, quiet, gpuHours float64
		copies                        []string
		prices                        map[string]string
	}
	eps := map[string]*endpoint{}
	for _, i := range cost.Idle(in, cost.Lines(in)) {
		if i.Gap != nil {
			e.warnings.add("idle capacity: " + i.Gap.Error())
			continue
		}
		ep := eps[i.Endpoint]
		if ep == nil {
			ep = &endpoint{prices: map[string]string{}}
			eps[i.Endpoint] = ep
		}
		ep.perDay += i.PerDay
		ep.gpuHours += i.GPUHours
		ep.prices[i.InstanceType] = i.Price.Describe()
		if i.Kind == cost.IdleNoCopy {
			ep.free += i.PerDay
		} else {
			ep.quiet += i.PerDay
			ep.copies = append(ep.copies, i.Copy)
		}
	}
	var out []Finding
	for name, ep := range eps {
		if ep.perDay < e.cfg.IdleInfoUSDPerDay {
			continue
		}
		sev := Info
		if ep.perDay >= e.cfg.IdleWarnUSDPerDay {
			sev = Warning
		}
		var prices []string
		for typ, p := range ep.prices {
			prices = append(prices, typ+" "+p)
		}
		sort.Strings(prices)
		sort.Strings(ep.copies)
		ev := []Evidence{
			{What: "idle spend per day", Value: usd(ep.perDay), Query: ex.GPUs},
			{What: "GPUs with no copy, per day", Value: usd(ep.free), Query: ex.GPUs},
			{What: "idle GPU-hours in the range", Value: fmt.Sprintf("%.1f", ep.gpuHours), Query: ex.GPUs},
			{What: "prices", Value: strings.Join(prices, "; "), Query: ex.GPUs},
		}
		next := "Scale instances in, or place copies on the free GPUs (Capacity → Will it fit?)."
		if len(ep.copies) > 0 {
			ev = append(ev, Evidence{What: fmt.Sprintf("copies under %g output tokens an hour, per day", e.cfg.IdleQuietTokensPerHour), Value: usd(ep.quiet) + " (" + strings.Join(ep.copies, ", ") + ")", Query: ex.Output})
			next += " Copies that serve nothing: lower the IC's minimum copies or remove it."
		}
		out = append(out, Finding{
			Cause: "idle capacity", Target: Target{Level: LevelEndpoint, Name: name, Endpoint: name}, Severity: sev,
			Score:    strength(ep.perDay, e.cfg.IdleInfoUSDPerDay, 10*e.cfg.IdleWarnUSDPerDay),
			Summary:  fmt.Sprintf("%s a day of %s pays for GPUs that serve nothing (%s on GPUs with no copy, %s on quiet copies), at list or configured prices", usd(ep.perDay), name, usd(ep.free), usd(ep.quiet)),
			Evidence: ev, Next: next, standing: true,
		})
	}
	return out, nil
}

func usd(v float64) string { return "$" + fmt.Sprintf("%.2f", math.Round(v*100)/100) }
