package builder

import (
	"fmt"
	"strings"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Short names for the labels every query groups or filters by.
const (
	lEP   = sc.LabelEndpoint
	lIC   = sc.LabelInferenceComp
	lCID  = sc.LabelContainerID
	lFW   = sc.LabelFramework
	lHost = sc.LabelHostID
	lType = sc.LabelHostType
	lAZ   = sc.LabelAZ
)

// The PromQL writing rules (quoting, metric names, engine pairs) live in pkg/promqlexpr;
// these short names keep the panel code readable.
var (
	label  = px.Label
	labels = px.Labels
	eq     = px.Eq
	re     = px.Re
	neq    = px.Neq
	sel    = px.Sel
	agg    = px.Agg
	or     = px.Or
)

// Template variable references.
const (
	vEndpoint   = "$endpoint"
	vIC         = "$inference_component"
	vInstance   = "$instance"
	vAZ         = "$az"
	vFramework  = "$framework"
	vModel      = "$model"
	vPercentile = "$percentile"
	vAgg        = "$agg"
	rateWindow  = "[$__rate_interval]"
	rangeWindow = "[$__range]"
)

// aggLabel is the aggregation-level variable used as a label name: the variable holds the bare
// label (so legends can use {{$agg}}) and queries quote it.
var aggLabel = `"` + vAgg + `"`

// Scopes: which variables a series family can be filtered by.

// engine selects engine series (vLLM, SGLang, DJL): they carry every SageMaker label and the
// served model name.
func engine(metric string, extra ...string) string {
	return scoped(metric, append([]string{re(lEP, vEndpoint), re(lIC, vIC), re(lAZ, vAZ), re(lHost, vInstance), re(lFW, vFramework), re(sc.LabelModelName, vModel)}, extra...)...)
}

// gpu selects DCGM series; the IC label is present only on GPUs an IC copy owns.
func gpu(metric string, extra ...string) string {
	return scoped(metric, append([]string{re(lEP, vEndpoint), re(lIC, vIC), re(lAZ, vAZ), re(lHost, vInstance)}, extra...)...)
}

// host selects machine-level series (node exporter, or DCGM for capacity): no IC filter,
// because headroom belongs to the machine, not to the model on it.
func host(metric string, extra ...string) string {
	return scoped(metric, append([]string{re(lEP, vEndpoint), re(lAZ, vAZ), re(lHost, vInstance)}, extra...)...)
}

// classic selects enriched vended metrics, which keep CloudWatch dimension names.
func classic(metric string, extra ...string) string {
	return scoped(metric, append([]string{re(sc.DimEndpointName, vEndpoint)}, extra...)...)
}

// event selects control-plane event series of an endpoint.
func event(metric string, extra ...string) string {
	return scoped(metric, append([]string{re(lEP, vEndpoint)}, extra...)...)
}

// Expression helpers.

func sumBy(by []string, expr string) string { return agg("sum", by, expr) }
func avgBy(by []string, expr string) string { return agg("avg", by, expr) }
func maxBy(by []string, expr string) string { return agg("max", by, expr) }
func countBy(by []string, expr string) string {
	return agg("count", by, expr)
}

// byAgg groups by the aggregation-level variable plus fixed labels.
func byAgg(op string, expr string, extra ...string) string {
	list := aggLabel
	if len(extra) > 0 {
		list += ", " + labels(extra...)
	}
	return op + " by (" + list + ") (" + expr + ")"
}

func rate(selector, window string) string { return "rate(" + selector + window + ")" }

// tag adds a constant label so that otherwise identical label sets survive an `or`.
func tag(expr, name, value string) string { return px.Tag(expr, name, value) }

// quantile is histogram_quantile over a cumulative native histogram (engine metrics).
func quantile(q string, by []string, selector, window string) string {
	return "histogram_quantile(" + q + ", " + sumBy(by, rate(selector, window)) + ")"
}

// deltaSum is the total of a delta-temporality classic metric over a window; rate() is wrong
// on delta data and CloudWatch does not warn.
func deltaSum(by []string, selector, window string) string {
	return sumBy(by, "sum_over_time("+selector+window+")")
}

// deltaPerSecond turns a delta count into a per-second rate over a fixed 5m window.
func deltaPerSecond(by []string, selector string) string {
	return deltaSum(by, selector, "[5m]") + " / 300"
}

// deltaQuantileMs is the latency quantile of a delta µs histogram, in milliseconds.
func deltaQuantileMs(q string, by []string, selector string) string {
	return "histogram_quantile(" + q + ", " + deltaSum(by, selector, "[5m]") + ") / 1000"
}

// Engine metric pairs: the same question asked of vLLM and of SGLang.
type enginePair = px.EnginePair

var (
	ttftPair      = px.TTFT
	itlPair       = px.ITL
	e2ePair       = px.E2E
	runningPair   = px.Running
	waitingPair   = px.Waiting
	kvPair        = px.KVUsage
	promptPair    = px.PromptTokens
	generatedPair = px.GenerationTokens
)

// engineQuantile: per-engine histogram quantiles joined with `or`.
func engineQuantile(q string, by []string, p enginePair, window string) string {
	return or(quantile(q, by, engine(p.VLLM), window), quantile(q, by, engine(p.SGLang), window))
}

// engineGauge aggregates a gauge across both engines (raw series first, so hosts running
// both engines add up instead of one hiding the other).
func engineGauge(op string, by []string, p enginePair) string {
	return agg(op, by, or(engine(p.VLLM), engine(p.SGLang)))
}

// engineRate sums a counter's rate across both engines.
func engineRate(by []string, p enginePair, window string) string {
	return sumBy(by, or(rate(engine(p.VLLM), window), rate(engine(p.SGLang), window)))
}

// hostAZ is one row per instance carrying InstanceId (the classic dimension) and the AZ, used
// to give classic per-instance metrics an AZ and to apply the AZ filter to them.
func hostAZ() string {
	return countBy([]string{sc.DimInstanceID, lAZ},
		labelCopy(host(sc.NodeMemTotal), sc.DimInstanceID, lHost))
}

// vendedForms is a vended metric's per-instance form (every endpoint, no IC dimension) and
// its per-copy form (IC endpoints: IC, instance and container).
type vendedForms struct{ byInstance, perCopy string }

var (
	invocationsV  = vendedForms{sc.InvocationsByInstanceID, sc.InvocationsForICByInstanceID}
	errors4xxV    = vendedForms{sc.Invocation4XXErrorsByInstance, sc.Invocation4XXErrorsForICByInstanceID}
	errors5xxV    = vendedForms{sc.Invocation5XXErrorsByInstance, sc.Invocation5XXErrorsForICByInstanceID}
	modelErrorsV  = vendedForms{sc.InvocationModelErrorsByInstance, sc.InvocationModelErrorsForICByInstance}
	modelLatencyV = vendedForms{sc.ModelLatencyByInstanceID, sc.ModelLatencyForICByInstanceID}
	overheadV     = vendedForms{sc.OverheadLatencyByInstanceID, sc.OverheadLatencyForICByInstanceID}
)

// withAZ gives a per-instance vended expression the AZ of its instance, and so applies the
// endpoint, AZ and instance filters of the machine it ran on.
func withAZ(expr string) string {
	return expr + " * on (" + label(sc.DimInstanceID) + ") group_left (" + label(lAZ) + ") " + hostAZ()
}

// vendedWindow is one form of a vended metric summed over a window, filtered by IC and
// instance and joined to its AZ.
func vendedWindow(metric, window string) string {
	return withAZ("sum_over_time(" + classic(metric, re(sc.DimInferenceComponentName, vIC), re(sc.DimInstanceID, vInstance)) + window + ")")
}

// scopedVended applies every filter to a vended metric: the per-instance form while the IC
// filter is All, the per-copy form once ICs are chosen. A series without the
// InferenceComponentName label matches the IC filter only through its All value (.*), so the
// per-instance side is empty exactly when ICs are chosen, and `or` then takes the per-copy side.
// outer aggregates each side (grouping by InstanceId, AZ or nothing).
func scopedVended(v vendedForms, window string, outer func(string) string) string {
	return "(" + outer(vendedWindow(v.byInstance, window)) + " or " + outer(vendedWindow(v.perCopy, window)) + ")"
}

// scopedCount is a vended count over a window, summed by the given labels.
func scopedCount(v vendedForms, by []string, window string) string {
	return scopedVended(v, window, func(e string) string { return sumBy(by, e) })
}

// scopedPerSecond is a vended count per second over 5 m.
func scopedPerSecond(v vendedForms, by []string) string {
	return scopedCount(v, by, "[5m]") + " / 300"
}

// scopedQuantileMs is the quantile of a vended µs latency histogram over 5 m, in ms.
func scopedQuantileMs(q string, v vendedForms) string {
	return scopedVended(v, "[5m]", func(e string) string { return "histogram_quantile(" + q + ", " + sumBy(nil, e) + ")" }) + " / 1000"
}

// instanceSeries is one series per serving instance (grouped by host and the given labels):
// every instance's host series while the IC filter is All, the instances holding the chosen
// ICs' GPUs once ICs are chosen (host series have no IC label, so they match only All).
func instanceSeries(by ...string) string {
	by = append([]string{lHost}, by...)
	return countBy(by, host(sc.NodeMemTotal, re(lIC, vIC))) + " or " + countBy(by, gpu(sc.DCGMGPUUtil, neq(lIC, "")))
}

// instancesPerAZ counts serving instances per AZ (and the given labels).
func instancesPerAZ(extra ...string) string {
	return countBy(append([]string{lAZ}, extra...), instanceSeries(append([]string{lAZ}, extra...)...))
}

// ReadsVended reports whether a query reads enriched vended metrics: their selectors alone
// match CloudWatch dimension names, and they are missing while OTel enrichment is off.
func ReadsVended(expr string) bool {
	return strings.Contains(expr, label(sc.DimEndpointName)+"=~") || strings.Contains(expr, label(sc.DimInferenceComponentName)+"=~")
}

// anyVended is one series while vended metrics arrive for the selected endpoints: zeros
// drawn for quiet AZs only make sense when the traffic metric exists at all.
func anyVended() string {
	return "count (" + classic(sc.InvocationsByInstanceID) + ")"
}

// fleetAZs lists every AZ the fleet runs in, with value 0, so that an AZ the selection does not
// use shows up as an explicit zero rather than disappearing.
func fleetAZs() string {
	return "0 * " + countBy([]string{lAZ}, scoped(sc.NodeMemTotal, re(lAZ, vAZ)))
}

// icClassic selects a per-IC vended metric. These carry only InferenceComponentName, so the
// endpoint filter comes from onEndpointICs.
func icClassic(metric string) string {
	return scoped(metric, re(sc.DimInferenceComponentName, vIC))
}

// onEndpointICs restricts a result grouped by InferenceComponentName to the ICs of the
// selected endpoints (read from the GPUs the ICs own).
func onEndpointICs(expr string) string {
	ics := countBy([]string{lIC}, gpu(sc.DCGMGPUUtil, neq(lIC, "")))
	return "(" + expr + ") and on (" + label(sc.DimInferenceComponentName) + ") " +
		labelCopy(ics, sc.DimInferenceComponentName, lIC)
}

// icCopies counts IC copies: distinct (IC, container) pairs on the GPUs they own.
func icCopies(by ...string) string {
	inner := append(append([]string{}, by...), lIC, lCID)
	return countBy(by, countBy(inner, gpu(sc.DCGMGPUUtil, neq(lIC, ""))))
}

// labelCopy copies label src into dst, so classic (CloudWatch dimension) and engine series join.
func labelCopy(expr, dst, src string) string {
	return fmt.Sprintf(`label_replace(%s, %q, "$1", %q, "(.+)")`, expr, dst, src)
}
