package diagnosis

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
)

const changeRuleID = "change"

// The change rule's thresholds. A latency P99 per IC is noisy (a few slow requests move
// it), so a regression is its median over changeHold (non-departing points included)
// changeRise times its level over changeBaseline before the change (critical from
// changeRiseCrit) and higher by the trace's minRise; the first changeWarmup after a change
// (new copies loading, caches cold) is not read as its effect. An error ratio's level is
// the errors over the invocations of the same window.
const (
	changeRise     = 1.75
	changeRiseCrit = 2.0
	changeBaseline = 30 * time.Minute
	changeWarmup   = 5 * time.Minute
	// A signal whose last changeRecent before the change is changeAlready times the
	// baseline before that was already rising: the change did not start it.
	changeRecent  = 10 * time.Minute
	changeAlready = 1.25
	// changeMinRun is the fewest points a departure cut short by the range end must have,
	// their level departing as a whole: the rule names a change within minutes, before
	// changeHold has passed (a change 2 minutes before its signal is named 4 minutes
	// after the signal: warm-up, then two points; three would leave no margin under 5).
	changeMinRun = 2
)

// The smallest latency rise blamed on a change: below 100 ms of time to first token or
// 5 ms a token (a second over a 200-token answer), users do not notice and a rollback is
// not worth it.
const (
	minTTFTRise = 0.1
	minITLRise  = 0.005
)

// changeHold is how long a departure must last (unless the range ends first): longer than
// the rate window, whose overlapping windows make one slow burst several points.
func (e *env) changeHold() time.Duration { return max(10*time.Minute, 2*e.window) }

// itlExpr: P99 inter-token latency per endpoint/IC over time, as ttftExpr.
func (e *env) itlExpr() string {
	return px.ITL.Each(func(m string) string {
		return fmt.Sprintf("histogram_quantile(0.99, sum %s (rate(%s[%s])))", px.By(lEP, lIC), e.eng(m), promDur(e.window))
	})
}

// trace is one signal of one resource on the step grid: v per point, and for error ratios n,
// the invocations (v the errors); n is nil for latencies.
type trace struct {
	what     string // "TTFT P99", "5xx errors"
	kind     string // changes.KindComponent or changes.KindEndpoint
	res, ep  string
	query    string
	t        []time.Time
	v, n     []float64
	isRatio  bool
	minRise  float64 // a latency's smallest rise blamed, seconds
	panelFor panelRef
}

// index is the first point at or after t.
func (tr *trace) index(t time.Time) int {
	i, _ := slices.BinarySearchFunc(tr.t, t, time.Time.Compare)
	return i
}

// level is the signal over points [i, j): the median latency, or errors over invocations.
func (tr *trace) level(i, j int) float64 {
	if !tr.isRatio {
		return quantile(tr.v[i:j], 0.5)
	}
	errs, inv := 0.0, 0.0
	for k := i; k < j; k++ {
		errs, inv = errs+tr.v[k], inv+tr.n[k]
	}
	if inv == 0 {
		return math.NaN()
	}
	return errs / inv
}

// departs says whether point i departs from the level before: a latency changeRise times it,
// an error ratio at the warning level, errorSpikeRatio times it and beyond chance.
func (tr *trace) departs(e *env, i int, before float64) bool {
	if !tr.isRatio {
		return tr.v[i] >= changeRise*before
	}
	if tr.n[i] <= 0 {
		return false
	}
	r := tr.v[i] / tr.n[i]
	return r >= errorRateWarn && r >= errorSpikeRatio*before && beyondChance(ratioPoint{errs: tr.v[i], invocs: tr.n[i]}, before, e.cfg.ErrorMinCount)
}

// regressed says whether the level after departs from the level before.
func (tr *trace) regressed(after, before float64) bool {
	if !finite(after) {
		return false
	}
	if tr.isRatio {
		return after >= errorRateWarn && after >= errorSpikeRatio*before
	}
	return after >= changeRise*before && after-before >= tr.minRise
}

// rising says whether the signal was already departing before the change at `at` (points
// [lo, hi) are its baseline): a departing point within the rate window before it, or (a
// latency) its last changeRecent changeAlready times the baseline before that. Decided
// apart from where the departure after the change is traced back to, which one dip stops.
func (tr *trace) rising(e *env, at time.Time, lo, hi int, before float64) bool {
	for k := hi - 1; k >= lo && !tr.t[k].Before(at.Add(-e.window)); k-- {
		if tr.departs(e, k, before) {
			return true
		}
	}
	if tr.isRatio {
		return false // errors from near zero: the departing points above tell it
	}
	mid := tr.index(at.Add(-changeRecent))
	return mid-lo >= minPoints && hi-mid >= minPoints && tr.level(mid, hi) >= changeAlready*tr.level(lo, mid)
}

// departure is the signal the change at `at` may have caused: the level over changeBaseline
// before it, and the first departing point after the warm-up whose changeHold (or what the
// range has of it) departs as a whole, traced back to where it began. ok is false when
// there is no baseline, the signal was already rising, or no such departure reaches the range.
func (tr *trace) departure(e *env, at time.Time) (first int, before, after float64, ok bool) {
	lo, hi := tr.index(at.Add(-changeBaseline)), tr.index(at.Add(time.Nanosecond))
	if hi-lo < minPoints {
		return 0, 0, 0, false
	}
	if before = tr.level(lo, hi); !finite(before) || (!tr.isRatio && before <= 0) || tr.rising(e, at, lo, hi, before) {
		return 0, 0, 0, false
	}
	minRun := changeMinRun
	if tr.isRatio {
		minRun = 1 // each step of an error ratio is already tested beyond chance
	}
	for i := tr.index(at.Add(changeWarmup)); i < len(tr.t); i++ {
		if !tr.departs(e, i, before) {
			continue
		}
		j := tr.index(tr.t[i].Add(e.changeHold()))
		if (j == len(tr.t) && j-i < minRun) || !tr.regressed(tr.level(i, j), before) || tr.t[j-1].Before(e.start) {
			continue
		}
		first = i
		for first > hi && tr.departs(e, first-1, before) {
			first--
		}
		return first, before, tr.level(i, j), true
	}
	return 0, 0, 0, false
}

// relates says whether c is about the trace's resource or its endpoint.
func (tr *trace) relates(c changes.Change) bool {
	return (c.Kind == tr.kind && c.Resource == tr.res) ||
		(c.Kind == changes.KindEndpoint && c.Resource == tr.ep) ||
		(tr.kind == changes.KindEndpoint && c.Kind == changes.KindComponent && c.Endpoint == tr.ep)
}

// runChange: a resource whose latency or error ratio departs, within changes.DefaultWindow
// after a change to it or its endpoint, from its level before that change, is led by the
// change (changes.Attribute ranks several). A signal that began before the change, or a
// change elsewhere, is not blamed. Without changes (none, or CloudTrail not readable) it
// sends no query.
func runChange(ctx context.Context, e *env) ([]Finding, error) {
	var cands []changes.Change
	for _, c := range e.readChanges(ctx) {
		if (c.Kind == changes.KindComponent || c.Kind == changes.KindEndpoint) && !byAutoscaler(c) {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	from := slices.MinFunc(cands, func(a, b changes.Change) int { return a.Time.Compare(b.Time) }).Time.Add(-changeBaseline)
	traces, err := e.changeTraces(ctx, from)
	if err != nil {
		return nil, err
	}
	endpointOf := map[string]string{}
	for _, tr := range traces {
		if tr.kind == changes.KindComponent {
			endpointOf[tr.res] = tr.ep
		}
	}
	changes.FillEndpoints(cands, endpointOf)
	best := map[string]Finding{} // by resource: its strongest signal
	for _, tr := range traces {
		f, ok := e.changeFinding(tr, cands)
		if k := tr.kind + "\x00" + tr.res; ok && (best[k].Cause == "" || f.Score > best[k].Score) {
			best[k] = f
		}
	}
	out := make([]Finding, 0, len(best))
	for _, f := range best {
		out = append(out, f)
	}
	return out, nil
}

// byAutoscaler says whether Application Auto Scaling made c (its service-linked role, or
// the service calling on a role's behalf): the scaling rule's business, not a deploy, and
// its scale-outs come with the latency of new copies loading.
func byAutoscaler(c changes.Change) bool {
	return strings.Contains(c.Who, "AWSServiceRoleForApplicationAutoScaling") || c.Who == "application-autoscaling.amazonaws.com"
}

// onlyMoreCopies says whether c sets nothing but a higher copy count: more capacity does not
// slow requests (its new copies' loading is the warm-up), so it never explains a latency rise.
func onlyMoreCopies(c changes.Change) bool {
	more := false
	for _, d := range c.Diff {
		if d.From == d.To {
			continue
		}
		from, err1 := strconv.Atoi(d.From)
		to, err2 := strconv.Atoi(d.To)
		if d.Field != changes.FieldCopies || err1 != nil || err2 != nil || to <= from {
			return false
		}
		more = true
	}
	return more
}

// changeTraces reads TTFT and ITL per IC (or single-model endpoint) and the error ratio per
// endpoint (per IC in IC scope) from `from` on.
func (e *env) changeTraces(ctx context.Context, from time.Time) ([]*trace, error) {
	var out []*trace
	for _, l := range []struct {
		what, q string
		minRise float64
	}{{"TTFT P99", e.ttftExpr(), minTTFTRise}, {"ITL P99", e.itlExpr(), minITLRise}} {
		m, err := e.matrixFrom(ctx, l.q, from)
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			tr := &trace{what: l.what, query: l.q, minRise: l.minRise, ep: label(s.Metric, lEP), res: label(s.Metric, lIC), kind: changes.KindComponent, panelFor: panelLatencyBreakdown}
			if tr.res == "" {
				tr.kind, tr.res = changes.KindEndpoint, tr.ep
			}
			for _, p := range s.Values {
				if v := float64(p.Value); finite(v) {
					tr.t, tr.v = append(tr.t, p.Timestamp.Time()), append(tr.v, v)
				}
			}
			out = append(out, tr)
		}
	}
	tr, q, err := e.trafficFrom(ctx, from)
	if err != nil {
		return nil, err
	}
	for _, t := range tr {
		for _, k := range errorKinds {
			if k.tag != "5xx" && k.tag != "model" {
				continue // what a bad setting fails: 5xx and model errors, not invocations or 4xx
			}
			x := &trace{what: k.label, query: q, isRatio: true, kind: changes.KindEndpoint, res: t.name, ep: t.name, panelFor: panelErrors}
			if t.ic {
				x.kind, x.ep = changes.KindComponent, e.scope.Endpoint
			}
			for _, p := range t.ratios(k.tag) {
				x.t, x.v, x.n = append(x.t, p.t.Time()), append(x.v, p.errs), append(x.n, p.invocs)
			}
			out = append(out, x)
		}
	}
	return out, nil
}

// changeFinding ties tr's departure to the change that probably caused it, trying the
// related changes latest first (each measured against its own before).
func (e *env) changeFinding(tr *trace, cands []changes.Change) (Finding, bool) {
	for i := len(cands) - 1; i >= 0; i-- {
		c := cands[i]
		if !tr.relates(c) || (!tr.isRatio && onlyMoreCopies(c)) {
			continue
		}
		first, before, after, ok := tr.departure(e, c.Time)
		if !ok {
			continue
		}
		sig := changes.Signal{Kind: tr.kind, Resource: tr.res, Endpoint: tr.ep, Start: tr.t[first]}
		causes := changes.Attribute(sig, cands, changes.DefaultWindow)
		if len(causes) == 0 || !sameChange(causes[0].Change, c) {
			// The signal began long after c, or attribution ranks another change first,
			// whose own before and after were not what was measured here.
			continue
		}
		return e.describeChange(tr, causes[0], before, after, first), true
	}
	return Finding{}, false
}

func sameChange(a, b changes.Change) bool {
	return a.EventID == b.EventID && a.Time.Equal(b.Time) && a.Action == b.Action && a.Resource == b.Resource
}

func (e *env) describeChange(tr *trace, cause changes.Cause, before, after float64, first int) Finding {
	c := cause.Change
	target := Target{Level: LevelEndpoint, Name: tr.res, Endpoint: tr.ep}
	if tr.kind == changes.KindComponent {
		target = Target{Level: LevelIC, Name: tr.res, Endpoint: tr.ep, InferenceComponent: tr.res}
	}
	sev := Warning
	var rose, levels string
	var score float64
	if tr.isRatio {
		rose = fmt.Sprintf("rose from %s to %s of invocations", pctPts(100*before), pctPts(100*after))
		levels = pctPts(100*before) + " → " + pctPts(100*after)
		score = strength(after, errorRateWarn, 1)
		if after >= e.cfg.ErrorRateCrit {
			sev = Critical
		}
	} else {
		x := after / before
		rose = fmt.Sprintf("rose %s×", num1(x))
		levels = fmt.Sprintf("%s → %s (%s×)", secs(before), secs(after), num1(x))
		score = strength(x, changeRise, 5)
		if x >= changeRiseCrit {
			sev = Critical
		}
	}
	what := c.Action
	if c.Who != "" {
		what += " by " + c.Who
	}
	if d := changes.DiffText(c.Diff); d != "" {
		what += ": " + d
	}
	onto := ""
	if c.Resource != tr.res {
		onto = " on " + c.Resource
	}
	return Finding{
		Cause:    "Regression after a change (" + c.Action + ")",
		Target:   target,
		Severity: sev,
		Score:    score,
		began:    tr.t[first],
		Summary:  fmt.Sprintf("%s on %s %s from %s after %s%s", tr.what, tr.res, rose, fmtDur(cause.Lead), what, onto),
		Evidence: []Evidence{
			{What: tr.what + " before → after the change", Value: levels, Query: tr.query},
			{What: "change (CloudTrail)", Value: fmt.Sprintf("%s on %s %s at %s, event %s", c.Action, c.Kind, c.Resource, e.clock(c.Time), c.EventID)},
		},
		Next:      fmt.Sprintf("Roll back %s on %s (or compare the new setting with the old one in a canary) and watch %s; CloudTrail event %s has the full request.", c.Action, c.Resource, tr.what, c.EventID),
		PanelLink: panelLink(tr.panelFor, target, e.start, e.end),
	}
}
