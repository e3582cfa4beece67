package health

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Rule is one of today's engine thresholds, used for resources without an alarm: an instant
// PromQL query giving one value per endpoint and inference component (labels semconv's), in
// ALARM at or above Threshold.
type Rule struct {
	Label     string // shown in the alarm column, e.g. "threshold: KV cache ≥ 90 %"
	What      string // the reading in the reason, e.g. "KV cache usage"
	Query     string
	Threshold float64
	// Scale turns a value into the percentage shown in reasons.
	Scale float64
}

// Reading is one value of a rule's query, in the region the query was sent to; Account is
// the series' @aws.account ("" when it has none).
type Reading struct {
	Endpoint, Component string
	Region, Account     string
	Value               float64
}

// ThresholdRules are the KV cache and GPU memory thresholds of the diagnosis configuration
// (the colouring for resources without an alarm), their queries limited to the
// filter's endpoints and components. byAccount keeps @aws.account in the readings, so the
// same names in two source accounts of a monitoring account are read apart.
func ThresholdRules(cfg diagnosis.Config, f Filter, byAccount bool) []Rule {
	var m []string
	if len(f.Endpoints) > 0 {
		m = append(m, px.Re(semconv.LabelEndpoint, alternatives(f.Endpoints)))
	}
	if len(f.Components) > 0 {
		m = append(m, px.Re(semconv.LabelInferenceComp, alternatives(f.Components)))
	}
	by := []string{semconv.LabelEndpoint, semconv.LabelInferenceComp}
	if byAccount {
		by = append(by, semconv.LabelAccount)
	}
	kv := px.KVUsage.Each(func(metric string) string { return px.Agg("max", by, px.Sel(metric, m...)) })
	used, free := px.Sel(semconv.DCGMFBUsed, m...), px.Sel(semconv.DCGMFBFree, m...)
	fb := fmt.Sprintf("100 * %s (%s / (%s + %s))", "max "+px.By(by...), used, used, free)
	return []Rule{
		{Label: "threshold: KV cache ≥ " + pct(cfg.KVSaturation*100), What: "KV cache usage", Query: kv, Threshold: cfg.KVSaturation, Scale: 100},
		{Label: "threshold: GPU memory ≥ " + pct(cfg.GPUMemWarnPct), What: "GPU memory used", Query: fb, Threshold: cfg.GPUMemWarnPct, Scale: 1},
	}
}

// alternatives is a regex matching exactly the names (SageMaker names need no escaping, but
// QuoteMeta keeps that an assumption of models, not of this query).
func alternatives(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(q, "|")
}

func pct(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " %" }

// ApplyThresholds gives the endpoints and inference components still without an alarm a
// state from the rules' readings of their own region (readings[i] answers rules[i], for
// every region queried): ALARM when a reading reaches
// its threshold, else OK when there is any reading; no reading leaves NO_ALARM. The worst
// rule is shown, on a tie the one closest to its threshold. The states are sorted again.
func ApplyThresholds(states []State, rules []Rule, readings [][]Reading, at time.Time) {
	for i := range states {
		s := &states[i]
		if s.Source != SourceNone || s.Type == TypeInstance {
			continue
		}
		bestRatio := -1.0
		for r, rule := range rules {
			v, ok := peak(s.Resource, readings[r])
			if !ok {
				continue
			}
			state, op := "OK", "<"
			if v >= rule.Threshold {
				state, op = "ALARM", "≥"
			}
			ratio := v / rule.Threshold
			if Severity(state) < Severity(s.State) || (Severity(state) == Severity(s.State) && ratio <= bestRatio) {
				continue
			}
			bestRatio = ratio
			th := rule.Threshold
			when := at.UTC()
			s.State, s.Source, s.Alarm, s.Metric, s.Threshold, s.Updated = state, SourceThreshold, rule.Label, rule.Query, &th, &when
			s.Reason = fmt.Sprintf("%s %s %s %s (no CloudWatch alarm on this resource)", rule.What, pct(round1(v*rule.Scale)), op, pct(th*rule.Scale))
		}
	}
	Sort(states)
}

// peak is the highest reading of the resource itself: an inference component's series, or an
// endpoint's series that belong to no IC, of its region and account. An IC's trouble colours
// the IC's tile, not its endpoint's as well; a reading of another region never counts, one
// of another account only when either account is unknown.
func peak(r Resource, readings []Reading) (float64, bool) {
	best, ok := 0.0, false
	for _, rd := range readings {
		match := rd.Endpoint == r.Endpoint && rd.Component == ""
		if r.Type == TypeComponent {
			match = rd.Component == r.Component
		}
		match = match && rd.Region == r.Region && (rd.Account == r.Account || rd.Account == "" || r.Account == "")
		if match && !math.IsNaN(rd.Value) && (!ok || rd.Value > best) {
			best, ok = rd.Value, true
		}
	}
	return best, ok
}

func round1(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 1, 64), 64)
	return f
}
