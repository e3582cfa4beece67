package plugin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/cost"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// costPoints bounds the GPU series' points per query: the step grows with the range.
const costPoints = 1000

// costQueries are the PromQL of one cost query: GPUs per holder and per instance over the
// range, and the output and input tokens per copy over the whole range.
type costQueries struct {
	cost.Exprs
	step     time.Duration
	from, to time.Time
}

func (d *Datasource) costQueriesOf(q *models.CostQuery) costQueries {
	step := d.sampleInterval()
	if span := q.TimeRange.To.Sub(q.TimeRange.From); span/step > costPoints {
		step = (span/costPoints + time.Minute - 1).Truncate(time.Minute)
	}
	from, to := models.AlignToStep(q.TimeRange.From, step, 0), models.AlignToStep(q.TimeRange.To, step, 0)
	matchers := func(label string, names []string) []string {
		if len(names) == 0 {
			return nil
		}
		return []string{px.Re(label, strings.Join(names, "|"))}
	}
	// Endpoints and accounts own whole instances; a component filter narrows only whose
	// GPUs and tokens are read, not the instances' GPU totals (its share stays its share).
	ex := cost.ExprsFor(models.FormatDuration(to.Sub(from)), step,
		append(matchers(sc.LabelEndpoint, q.Endpoints), matchers(sc.LabelAccount, q.Accounts)...), matchers(sc.LabelInferenceComp, q.Components))
	if q.GroupByTag != "" {
		ex = ex.WithTags(q.GroupByTag, q.Endpoints, q.Accounts)
	}
	return costQueries{Exprs: ex, step: step, from: from, to: to}
}

// runCost answers a cost query: in each region it names, the GPU series and token counts by
// PromQL (through the results cache), priced by the region's book (the price table, then the
// AWS Price List), as the view's table. A region that fails is named in the error; the
// others' rows stay.
func (d *Datasource) runCost(ctx context.Context, m *models.Model) backend.DataResponse {
	q, err := m.Cost()
	if err != nil {
		return problemResponse(refused(backend.DownstreamError(err)))
	}
	regions, err := d.regionsOf(q.RefID, q.Region)
	if err != nil {
		return problemResponse(refused(err))
	}
	cq := d.costQueriesOf(q)
	parts := forRegions(ctx, d, q.RefID, regions, func(ctx context.Context, rg *regional) (cost.Input, error) {
		return rg.costInput(ctx, cq)
	})
	var ok []cost.Input
	for _, p := range parts {
		if p.failed == nil {
			ok = append(ok, p.val)
		}
	}
	var frames data.Frames
	if len(ok) > 0 {
		fr := costFrame(q, ok)
		fr.RefID = q.RefID
		fr.Meta.ExecutedQueryString = "GPUs: " + cq.GPUs + "\nGPUs per instance: " + cq.Instances + "\nOutput tokens: " + cq.Output + "\nInput tokens: " + cq.Input + "\nStep: " + models.FormatDuration(cq.step)
		if cq.TagKey != "" {
			fr.Meta.ExecutedQueryString += "\nEndpoint tags: " + cq.EndpointTags + "\nComponent tags: " + cq.ICTags
		}
		frames = data.Frames{fr}
	}
	return mergeFailures(q.Region != "", parts, frames)
}

// costInput reads one region's GPU series, tokens and prices. An answer cut at the series
// limit fails the region, naming the fix (the user's to narrow, not the plugin's).
func (rg *regional) costInput(ctx context.Context, cq costQueries) (cost.Input, error) {
	in := cost.Input{Region: rg.region, From: cq.from, To: cq.to, Step: cq.step, QuietTokensPerHour: diagnosis.DefaultConfig().IdleQuietTokensPerHour}
	answer := func(a *promclient.Answer) cost.Answer {
		var out cost.Answer
		for _, s := range a.Series {
			out.Series = append(out.Series, cost.Series{Labels: func(n string) string { return s.Labels[n] }, T: s.T, V: s.V})
		}
		out.Cut = cutWarning(a)
		return out
	}
	in, err := cost.Read(ctx, in, cq.Exprs, promclient.MaxQueryLimit, func(ctx context.Context, expr string) (cost.Answer, error) {
		a, _, err := rg.queryRange(ctx, expr, cq.from, cq.to, cq.step)
		if err != nil {
			return cost.Answer{}, err
		}
		return answer(a), nil
	}, func(ctx context.Context, expr string) (cost.Answer, error) {
		a, _, err := rg.queryInstant(ctx, expr, cq.to)
		if err != nil {
			return cost.Answer{}, err
		}
		return answer(a), nil
	})
	var cut *cost.TruncatedError
	if errors.As(err, &cut) {
		err = backend.DownstreamError(err)
	}
	if err != nil {
		return in, err
	}
	in.Prices = rg.book(ctx)
	return in, nil
}

// book is the region's prices: the settings' price table over the region's list prices. A
// list that cannot be read (no permission, no endpoint, AWS failing) leaves gaps that say why.
func (rg *regional) book(ctx context.Context) *pricing.Book {
	b := pricing.NewBook(rg.priceTable)
	if rg.prices == nil {
		b.AddList(rg.region, nil, rg.pricesErr)
		return b
	}
	list, err := rg.prices.Prices(ctx, rg.region)
	if err != nil {
		err = errors.New(rg.explain(awsErr(err), awsapi.ActionGetProducts).Message)
	}
	b.AddList(rg.region, list, err)
	return b
}

// priceOf is the region's prices for the diagnosis rules, the book read on first use.
func (rg *regional) priceOf(ctx context.Context) func(string) (pricing.Price, error) {
	book := sync.OnceValue(func() *pricing.Book { return rg.book(ctx) })
	return func(instanceType string) (pricing.Price, error) { return book().Lookup(rg.region, instanceType) }
}

// costFrame is the view's table over the regions' inputs; a query naming its region adds a
// region column.
func costFrame(q *models.CostQuery, ins []cost.Input) *data.Frame {
	view, gpusPerCopy := q.View, q.GPUsPerCopy
	t := newTable(q.Region != "")
	var perModel []cost.ModelCost // every region's, ordered as the panel shows them
	if q.GroupByTag != "" {
		return costByTagFrame(q, ins)
	}
	for _, in := range ins {
		lines := cost.Lines(in)
		switch view {
		case models.CostViewSpend:
			// Filtered by component, the lines are those components' copies only: summed per
			// endpoint they would pass for the whole endpoint's spend.
			whole := cost.ByEndpoint(lines)
			if len(q.Components) > 0 {
				whole = nil
			}
			for _, s := range whole {
				t.row(in.Region, s.Gap,
					str("Account", s.Account), str("Endpoint", s.Endpoint), str("Inference component", "(whole endpoint)"), str("Instance type", s.InstanceType),
					usd("Price per hour", s.Price.USDPerHour, s.Gap), str("Price source", priceSource(s.Price, s.Gap)),
					num("Instance-hours", s.InstanceHours), num("GPU-hours", s.GPUHours), usd("Spend", s.Spend, s.Gap), usd("Idle spend", s.IdleSpend, s.Gap),
					str("Inputs", spendInputs(s.InstanceHours, s.Price, s.Spend, s.Gap)))
			}
			for _, s := range cost.ByIC(lines) {
				t.row(in.Region, s.Gap,
					str("Account", s.Account), str("Endpoint", s.Endpoint), str("Inference component", orSingle(s.IC)), str("Instance type", s.InstanceType),
					usd("Price per hour", s.Price.USDPerHour, s.Gap), str("Price source", priceSource(s.Price, s.Gap)),
					num("Instance-hours", s.InstanceHours), num("GPU-hours", s.GPUHours), usd("Spend", s.Spend, s.Gap), usd("Idle spend", math.NaN(), nil),
					str("Inputs", spendInputs(s.InstanceHours, s.Price, s.Spend, s.Gap)+" (its GPU share of the instances)"))
			}
		case models.CostViewTokens:
			perModel = append(perModel, cost.PerModel(in, lines)...)
		case models.CostViewIdle:
			for _, i := range cost.Idle(in, lines) {
				t.row(in.Region, i.Gap,
					str("Account", i.Account), str("Endpoint", i.Endpoint), str("Inference component", i.IC), str("Copy", i.Copy), str("Instance type", i.InstanceType),
					str("Idle", i.Kind), usd("Price per hour", i.Price.USDPerHour, i.Gap), num("GPU-hours", i.GPUHours), num("Instance-hours", i.InstanceHours),
					num("Output tokens", i.OutputTokens), usd("Idle spend", i.Spend, i.Gap), usd("Idle spend per day", i.PerDay, i.Gap),
					str("Inputs", spendInputs(i.InstanceHours, i.Price, i.Spend, i.Gap)+fmt.Sprintf(" over %s days", fmtNum(round(in.To.Sub(in.From).Hours()/24)))))
			}
		case models.CostViewPrices, models.CostViewFit:
			for _, p := range cost.TypePrices(in) {
				gpus := float64(p.GPUs)
				if p.GPUs == 0 {
					gpus = math.NaN() // not counted: the gap says why
				}
				perGPU := p.Price.USDPerHour / gpus
				cells := []cell{str("Instance type", p.InstanceType), num("GPUs per instance", gpus),
					usd("Price per hour", p.Price.USDPerHour, p.Gap), usd("Price per GPU-hour", perGPU, p.Gap), str("Price source", priceSource(p.Price, p.Gap))}
				if view == models.CostViewFit {
					instances := math.Ceil(float64(gpusPerCopy) / gpus)
					cells = append(cells, num("GPUs per copy", float64(gpusPerCopy)),
						usd("Copy on free GPUs per hour", perGPU*float64(gpusPerCopy), p.Gap), usd("New instances per hour", instances*p.Price.USDPerHour, p.Gap),
						str("Inputs", fitInputs(p, gpusPerCopy, instances)))
				}
				t.row(in.Region, p.Gap, cells...)
			}
		}
	}
	cost.SortCostliestPerToken(perModel)
	for _, m := range perModel {
		t.row(m.Region, m.Gap,
			str("Account", m.Account), str("Endpoint", m.Endpoint), str("Inference component", orSingle(m.IC)), str("Model", m.Model),
			str("Instance types", strings.Join(m.InstanceTypes, ", ")), num("Instance-hours", m.InstanceHours), usd("Spend", m.Spend, m.Gap),
			num("Output tokens", m.Output), num("Input tokens", m.Input),
			usd("USD per 1M output tokens", m.PerMillionOutput, m.Gap), usd("USD per 1M input tokens", m.PerMillionInput, m.Gap),
			str("Inputs", tokenInputs(m)))
	}
	return t.frame()
}

// costByTagFrame is the view's rows summed per value of the query's tag key, per region:
// the same amounts as the ungrouped view, so its rows add up to that view's total.
func costByTagFrame(q *models.CostQuery, ins []cost.Input) *data.Frame {
	t := newTable(q.Region != "")
	tagged := false
	for _, in := range ins {
		lines := cost.Lines(in)
		var rows []cost.TagSpend
		switch q.View {
		case models.CostViewSpend:
			rows = cost.SpendByTag(in, lines)
		case models.CostViewIdle:
			rows = cost.IdleByTag(in, cost.Idle(in, lines))
		case models.CostViewTokens:
			rows = cost.TokensByTag(in, cost.PerModel(in, lines))
		}
		for _, r := range rows {
			tagged = tagged || r.Value != cost.Untagged
			cells := []cell{str(q.GroupByTag, r.Value)}
			switch q.View {
			case models.CostViewSpend:
				cells = append(cells, num("Instance-hours", r.InstanceHours), num("GPU-hours", r.GPUHours), usd("Spend", r.Spend, r.Gap), usd("Idle spend", r.IdleSpend, r.Gap))
			case models.CostViewIdle:
				cells = append(cells, num("GPU-hours", r.GPUHours), num("Instance-hours", r.InstanceHours), usd("Idle spend", r.IdleSpend, r.Gap), usd("Idle spend per day", r.IdlePerDay, r.Gap))
			case models.CostViewTokens:
				cells = append(cells, num("Instance-hours", r.InstanceHours), usd("Spend", r.Spend, r.Gap), num("Output tokens", r.Output), num("Input tokens", r.Input),
					usd("USD per 1M output tokens", r.PerMillionOutput, r.Gap), usd("USD per 1M input tokens", r.PerMillionInput, r.Gap))
			}
			t.row(r.Region, r.Gap, cells...)
		}
	}
	fr := t.frame()
	if !tagged && len(fr.Fields) > 0 {
		// All untagged is what enrichment without resource tags looks like, not a fleet of
		// untagged endpoints only: say which switch to check.
		fr.Meta.Notices = append(fr.Meta.Notices, data.Notice{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf(
			"no endpoint or inference component carries the tag %q: check the key's spelling and case, and that %s is on", q.GroupByTag, sc.EnrichmentSwitch)})
	}
	return fr
}

func orSingle(ic string) string {
	if ic == "" {
		return "(single model)"
	}
	return ic
}

func priceSource(p pricing.Price, gap error) string {
	if gap != nil {
		return "none"
	}
	if p.Date.IsZero() {
		return p.Source
	}
	return p.Source + ", " + p.Date.UTC().Format(time.DateOnly)
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func fmtUSD(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 2, 64) }

func spendInputs(hours float64, p pricing.Price, spend float64, gap error) string {
	if gap != nil && math.IsNaN(hours) {
		return fmt.Sprintf("no instance-hours (%v)", gap)
	}
	if gap != nil {
		return fmt.Sprintf("%s instance-h × no price (%v)", fmtNum(round(hours)), gap)
	}
	return fmt.Sprintf("%s instance-h × %s = %s", fmtNum(round(hours)), p.Describe(), fmtUSD(spend))
}

func tokenInputs(m cost.ModelCost) string {
	if m.Gap != nil {
		return fmt.Sprintf("unknown (%v)", m.Gap)
	}
	if math.IsNaN(m.Output) {
		return fmt.Sprintf("%s over %s instance-h; output tokens unknown: no token counters (e.g. DJL), so no cost per token", fmtUSD(m.Spend), fmtNum(round(m.InstanceHours)))
	}
	return fmt.Sprintf("%s over %s instance-h ÷ %s output tokens × 1M", fmtUSD(m.Spend), fmtNum(round(m.InstanceHours)), fmtNum(math.Round(m.Output)))
}

func fitInputs(p cost.TypePrice, gpus int, instances float64) string {
	if p.Gap != nil {
		return fmt.Sprintf("unknown (%v)", p.Gap)
	}
	return fmt.Sprintf("%d GPUs × %s ÷ %d GPUs; or %s new instance(s) × $%s/h", gpus, p.Price.Describe(), p.GPUs, fmtNum(instances), fmtNum(p.Price.USDPerHour))
}

// round keeps hours readable in the inputs: 4 decimals.
func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }
