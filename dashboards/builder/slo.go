package builder

import (
	"fmt"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// SLOs per endpoint/IC: a latency SLO says "objective of the requests get their first token
// (or each next token) within target"; the availability SLO says "objective of the
// invocations do not fail with 5xx". Attainment is the good share, the error budget the
// allowed bad share (1 - objective), and a burn rate how fast a window spends it (1 = exactly
// the budget over the SLO period).

// SLO defaults: the dashboard's text-box variables start here and the burn-rate alerts use
// them. TTFT's target is the level diagnosis calls high.
var (
	SLOTTFTTarget       = diagnosis.DefaultConfig().TTFTHigh.Seconds()
	SLOITLTarget        = 0.2   // s per output token: a reader's pace with margin
	SLOLatencyObjective = 0.99  // the P99 objectives: 99 % of requests within target
	SLOErrorObjective   = 0.999 // 99.9 % of invocations without 5xx
)

// Dashboard variables holding the targets.
const (
	varTTFTTarget   = "slo_ttft_target"
	varITLTarget    = "slo_itl_target"
	varLatencyObj   = "slo_latency_objective"
	varErrorObj     = "slo_error_objective"
	sloRowID        = 190
	sloLatencyPanel = 50
	sloErrorPanel   = 51
	sloBurnPanel    = 52
)

// Multi-window multi-burn-rate alerts (the SRE workbook's pairs): a long window that proves
// the burn is real and a short one that proves it is still going on.
var burnWindows = []struct {
	name        string
	long, short time.Duration
	rate        float64 // budget spent 14.4× too fast = 2 % of 30 days in 1 h
	pending     time.Duration
	severity    string
}{
	{"fast", time.Hour, 5 * time.Minute, 14.4, 2 * time.Minute, sevCritical},
	{"slow", 6 * time.Hour, 30 * time.Minute, 6, 15 * time.Minute, sevWarning},
}

// sloSpec is one SLO: its bad-event ratio over a window and how to label it.
type sloSpec struct {
	key, name string
	objective float64
	// badRatio returns the share of bad events per resource over window w; sel picks the
	// selectors (alerts: whole fleet; dashboard: filtered by the variables).
	badRatio func(w string, target string, sel func(string) string) string
	target   float64
	resource []resourceLabel
	evidence dashref.Panel // where the SLI is drawn
}

// latencyBad is the share of requests slower than target over w, per endpoint/IC, for vLLM
// and SGLang (native histograms: histogram_fraction reads the share under target).
func latencyBad(p enginePair) func(w, target string, s func(string) string) string {
	return func(w, target string, s func(string) string) string {
		f := func(m string) string {
			// No request in w: the fraction is NaN, and there is no share to report.
			return "1 - (histogram_fraction(0, " + target + ", " + sumBy([]string{lEP, lIC}, rate(s(m), w)) + ") >= 0)"
		}
		return or(f(p.VLLM), f(p.SGLang))
	}
}

// errorBad is the 5xx share of invocations per endpoint over w, labelled like engine series
// so the dashboard and alerts treat it as one more endpoint SLO.
func errorBad(w, _ string, s func(string) string) string {
	ratio := deltaSum([]string{sc.DimEndpointName}, s(sc.Invocation5XXErrors), w) + " / (" + deltaSum([]string{sc.DimEndpointName}, s(sc.Invocations), w) + " > 0)"
	return sumBy([]string{lEP}, labelCopy("("+ratio+")", lEP, sc.DimEndpointName))
}

func defaultSLOs() []sloSpec {
	return []sloSpec{
		{"ttft", "TTFT P99", SLOLatencyObjective, latencyBad(ttftPair), SLOTTFTTarget, []resourceLabel{resEndpoint, resIC}, dashref.PerfTTFT},
		{"itl", "ITL P99", SLOLatencyObjective, latencyBad(itlPair), SLOITLTarget, []resourceLabel{resEndpoint, resIC}, dashref.PerfITL},
		{"errors", "5XX error ratio", SLOErrorObjective, errorBad, 0, []resourceLabel{resEndpoint}, dashref.PerfErrors},
	}
}

// burnRate over w with the fleet-wide selectors the alerts use.
func burnRate(s sloSpec, w time.Duration) string {
	return "(" + s.badRatio(rangeOf(w), floatText(s.target), func(m string) string { return sel(m) }) + ") / " + floatText(1-s.objective)
}

// sloAlertRules: for each SLO a fast and a slow burn-rate alert.
func sloAlertRules(slos []sloSpec) []alertRule {
	var out []alertRule
	for _, s := range slos {
		by := make([]string, len(s.resource))
		for i, r := range s.resource {
			by[i] = r.seriesLabel
		}
		for _, b := range burnWindows {
			out = append(out, alertRule{
				uid: "inferscope-slo-" + s.key + "-" + b.name, title: fmt.Sprintf("SLO %s: %s burn", s.name, b.name), group: groupPerformance,
				expr:   "(" + burnRate(s, b.long) + ") and on (" + labels(by...) + ") (" + burnRate(s, b.short) + " > " + floatText(b.rate) + ")",
				window: b.long, reducer: "last", op: "gt", threshold: b.rate, pending: b.pending, severity: b.severity,
				evidence: s.evidence, resource: s.resource, anchor: "slo-burn-rate",
				summary: fmt.Sprintf("%s of %s spends its error budget %s× too fast over %s (and still over the last %s); objective %s",
					s.name, resourceNames(s.resource), reduced(`printf "%.1f"`), durText(b.long), durText(b.short), pctText(s.objective)),
			})
		}
	}
	return out
}

// resourceNames writes the templated resource names of an SLO alert's summary.
func resourceNames(rs []resourceLabel) string {
	out := labelRef(rs[0].seriesLabel)
	for _, r := range rs[1:] {
		out += "/" + labelRef(r.seriesLabel)
	}
	return out
}

func pctText(v float64) string { return floatText(100*v) + " %" }

// Dashboard side: text-box variables for the targets and the "SLOs" row.

func sloVariables() []cog.Builder[dashboard.VariableModel] {
	tb := func(name, title, desc string, v float64) cog.Builder[dashboard.VariableModel] {
		return dashboard.NewTextBoxVariableBuilder(name).Label(title).Description(desc).
			DefaultValue(dashboard.StringOrMap{String: cog.ToPtr(floatText(v))}).Current(option(floatText(v), floatText(v)))
	}
	return []cog.Builder[dashboard.VariableModel]{
		tb(varTTFTTarget, "TTFT target (s)", "SLO: the first token within this many seconds.", SLOTTFTTarget),
		tb(varITLTarget, "ITL target (s)", "SLO: each next token within this many seconds.", SLOITLTarget),
		tb(varLatencyObj, "Latency objective", "Share of requests that must meet the TTFT and ITL targets (0.99 = P99).", SLOLatencyObjective),
		tb(varErrorObj, "Availability objective", "Share of invocations that must not fail with 5xx.", SLOErrorObjective),
	}
}

// withSLOs adds the SLO variables and the "SLOs" row to a dashboard (Performance).
func withSLOs(d *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	for _, v := range sloVariables() {
		d.WithVariable(v)
	}
	return d.WithRow(dashboard.NewRowBuilder("SLOs").Id(sloRowID)).
		WithPanel(sloLatencyTable(sloLatencyPanel)).WithPanel(sloErrorTable(sloErrorPanel)).WithPanel(sloBurnPanelTS(sloBurnPanel))
}

// dashSel filters a series by the dashboard's variables (engine or classic series).
func dashSel(m string) string {
	if m == sc.Invocations || m == sc.Invocation5XXErrors {
		return classic(m)
	}
	return engine(m)
}

// attainment and budgetLeft over the dashboard range with the variables' targets.
func attainment(s sloSpec, target string) string {
	return "1 - (" + s.badRatio(rangeWindow, target, dashSel) + ")"
}

func budgetLeft(s sloSpec, target, objective string) string {
	return "1 - (" + s.badRatio(rangeWindow, target, dashSel) + ") / (1 - " + objective + ")"
}

var (
	attainmentProps = props(prop("unit", unitRatio), prop("decimals", 2), cellBackground(),
		thresholdProp("red", step{0.95, "orange"}, step{0.99, "green"}))
	budgetProps = props(prop("unit", unitRatio), prop("decimals", 0), prop("max", 1), cellGauge(),
		thresholdProp("red", step{0, "orange"}, step{0.25, "green"}))
)

func sloLatencyTable(id uint32) *table.PanelBuilder {
	slos := defaultSLOs()
	ttft, itl := slos[0], slos[1]
	tb := tablePanel(id, "Latency SLOs: attainment and error budget",
		"Per endpoint and inference component over the time range: the share of requests whose TTFT (first token) and ITL (each next token) "+
			"met the targets ($slo_ttft_target s, $slo_itl_target s), and the error budget left against the objective ($slo_latency_objective). "+
			"Budget below 0 = the objective is missed over this range. Change the targets in the variables above; the alert rules use the defaults "+
			"(docs/alerting.md).").Height(8).Span(12).SortBy(sortBy("TTFT budget left", false))
	return columnsTable(tb, []labelCol{endpointCol(dashref.Performance), {lIC, "Inference component", nil}}, []valueCol{
		{attainment(ttft, "$"+varTTFTTarget), "TTFT attainment", attainmentProps},
		{budgetLeft(ttft, "$"+varTTFTTarget, "$"+varLatencyObj), "TTFT budget left", budgetProps},
		{attainment(itl, "$"+varITLTarget), "ITL attainment", attainmentProps},
		{budgetLeft(itl, "$"+varITLTarget, "$"+varLatencyObj), "ITL budget left", budgetProps},
	})
}

func sloErrorTable(id uint32) *table.PanelBuilder {
	errs := defaultSLOs()[2]
	tb := tablePanel(id, "Availability SLO: attainment and error budget",
		"Per endpoint over the time range: the share of invocations without a 5xx and the error budget left against the objective "+
			"($slo_error_objective). 4xx are the callers' errors and do not count."+
			notFiltered("the objective is the endpoint's, over every invocation it serves", sloEndpointOnly...)).
		Height(8).Span(12).SortBy(sortBy("Budget left", false)).NoValue(noVended)
	return columnsTable(tb, []labelCol{endpointCol(dashref.Performance)}, []valueCol{
		{attainment(errs, ""), "Attainment", attainmentProps},
		{budgetLeft(errs, "", "$"+varErrorObj), "Budget left", budgetProps},
	})
}

// sloEndpointOnly are the filters the availability SLO cannot follow: it is an endpoint's.
var sloEndpointOnly = []string{dashref.VarIC, dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel}

// sloBurnPanelTS: the 1 h burn rate of every SLO over time; the fast alert fires above 14.4.
func sloBurnPanelTS(id uint32) *timeseries.PanelBuilder {
	p := timeseriesPanel(id, "SLO burn rate (1 h)",
		"How fast each SLO spends its error budget over the last hour (1 = exactly on budget). The fast-burn alert fires above 14.4 "+
			"(with the last 5 minutes above it too), the slow-burn alert above 6 over 6 h."+
			notFiltered("the availability line is the endpoint's objective; the latency lines follow them", sloEndpointOnly...), unitShort).Span(24).
		NoValue("No data: no engine latency histograms, and no vended metrics (is OTel enrichment on?)").
		Thresholds(thresholds("transparent", step{6, "orange"}, step{14.4, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
	objective := map[string]string{"ttft": "$" + varLatencyObj, "itl": "$" + varLatencyObj, "errors": "$" + varErrorObj}
	target := map[string]string{"ttft": "$" + varTTFTTarget, "itl": "$" + varITLTarget, "errors": ""}
	for i, s := range defaultSLOs() {
		expr := "(" + s.badRatio("[1h]", target[s.key], dashSel) + ") / (1 - " + objective[s.key] + ")"
		p.WithTarget(promRange(string(rune('A'+i)), expr, s.name+" {{"+lEP+"}} {{"+lIC+"}}"))
	}
	return p
}
