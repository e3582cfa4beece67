package builder

import (
	"fmt"
	"strconv"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Alert rules: one per reading rule of pkg/diagnosis, with its thresholds (diagnosis'
// DefaultConfig is the one source). Each rule is one instant PromQL query (refId A) that
// returns the rule's signal per resource, already restricted by the rule's other conditions
// with `and`/`unless`; Grafana reduces it (B) and compares it with the threshold (C). One
// request per rule and evaluation keeps a minute's evaluation far under CloudWatch's TPS.

// Rule groups, one per dashboard.
const (
	groupPerformance = "Performance"
	groupCapacity    = "Capacity"
	groupReliability = "Reliability"
)

// Severities (the `severity` label a notification policy routes on).
const (
	sevCritical = "critical"
	sevWarning  = "warning"
)

// resourceLabel maps a series label to an alert label and the dashboard variable that
// filters the evidence panel to it.
type resourceLabel struct{ alertLabel, seriesLabel, variable string }

var (
	resEndpoint   = resourceLabel{"endpoint", lEP, dashref.VarEndpoint}
	resIC         = resourceLabel{"inference_component", lIC, dashref.VarIC}
	resInstance   = resourceLabel{"instance", lHost, dashref.VarInstance}
	resEndpointCW = resourceLabel{"endpoint", sc.DimEndpointName, dashref.VarEndpoint}
	resICCW       = resourceLabel{"inference_component", sc.DimInferenceComponentName, dashref.VarIC}
	resAZCW       = resourceLabel{"az", sc.DimAvailabilityZone, dashref.VarAZ}
	resInstType   = resourceLabel{"instance_type", sc.LabelEventInstanceType, ""}
)

// alertRule is one generated rule; alerting.go turns it into Grafana's provisioning format.
type alertRule struct {
	uid, title, group string
	expr              string
	window            time.Duration // the query's relative time range: its longest range selector
	reducer           string        // last | mean | max
	op                string        // gt | lt
	threshold         float64
	pending           time.Duration
	severity          string
	evidence          dashref.Panel // the panel that shows the signal
	resource          []resourceLabel
	anchor            string // docs/alerting.md heading anchor
	summary           string // what fired; reduced() prints the reduced value
}

// durText writes a whole-minute (or whole-second) duration in PromQL syntax.
func durText(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Second)) + "s"
}

// reduced prints the rule's reduced value (B) through fn, a template function or printf with
// its format, or "n/a" when the instance has none: Grafana leaves B out of $values when the
// evaluation returned no data or failed.
func reduced(fn string) string {
	return "{{ with $values.B }}{{ " + fn + " .Value }}{{ else }}n/a{{ end }}"
}

func rangeOf(d time.Duration) string { return "[" + durText(d) + "]" }

func floatText(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Windows of the alert queries: a few one-minute points so one late sample does not flap.
const (
	alertWindow    = 10 * time.Minute
	sustainWindow  = 15 * time.Minute
	baselineOffset = time.Hour
)

// alertRules lists the reading-rule alerts; cfg supplies every threshold.
func alertRules(cfg diagnosis.Config) []alertRule {
	epIC := []string{lEP, lIC}
	kv := func(m string) string {
		return maxBy(epIC, fmt.Sprintf("quantile_over_time(%s, %s%s)", floatText(cfg.KVQuantile), sel(m), rangeOf(sustainWindow)))
	}
	waiting := func(m string) string { return maxBy(epIC, "avg_over_time("+sel(m)+rangeOf(sustainWindow)+")") }
	onEPIC := " on (" + labels(lEP, lIC) + ") "

	// Engine queueing: TTFT P99 per endpoint/IC, unless the KV cache explains it (the KV rule
	// fires) or the platform's model latency rose against an hour before (not the engine).
	ttft := func(p, kvm string) string {
		return "(" + quantile("0.99", epIC, sel(p), rangeOf(alertWindow)) + ") and" + onEPIC + "(" + kv(kvm) + " < " + floatText(cfg.KVSaturation) + ")"
	}
	latencyRise := func(metric, dim string) string {
		now := "histogram_quantile(0.99, " + deltaSum([]string{dim}, sel(metric), rangeOf(alertWindow)) + ")"
		before := "histogram_quantile(0.99, " + deltaSum([]string{dim}, sel(metric), rangeOf(alertWindow)+" offset "+durText(baselineOffset)) + ")"
		return "(" + now + " / " + before + " >= " + floatText(cfg.LatencyNormal) + ")"
	}
	queueing := "(" + or(ttft(sc.VLLMTTFT, sc.VLLMKVCacheUsage), ttft(sc.SGLangTTFT, sc.SGLangTokenUsage)) + ")" +
		" unless on (" + label(lIC) + ") " + labelCopy(latencyRise(sc.ModelLatencyForIC, sc.DimInferenceComponentName), lIC, sc.DimInferenceComponentName) +
		" unless on (" + label(lEP) + ") " + labelCopy(latencyRise(sc.ModelLatency, sc.DimEndpointName), lEP, sc.DimEndpointName)

	// GPU memory per instance and IC (the IC owning the GPUs), filtered to those whose free
	// memory, extended linearly, runs out within TimeToFullCrit.
	fbBy := []string{lEP, lIC, lHost}
	used, free := sumBy(fbBy, sel(sc.DCGMFBUsed)), sumBy(fbBy, sel(sc.DCGMFBFree))
	fbPct := "100 * " + used + " / (" + used + " + " + free + ")"
	onFB := " on (" + labels(fbBy...) + ") "
	growth := fbPct + " and" + onFB + "(" + sumBy(fbBy, fmt.Sprintf("predict_linear(%s%s, %d)", sel(sc.DCGMFBFree), rangeOf(time.Hour), int(cfg.TimeToFullCrit.Seconds()))) + " <= 0)"

	// VRAM drop: percentage points lost within VRAMDropWithin on any GPU of an instance, on
	// an endpoint returning 5xx or model errors at the same time.
	gpuDrop := maxBy(fbBy, fmt.Sprintf("100 * (max_over_time(%s%s) - %s) / (%s + %s)",
		sel(sc.DCGMFBUsed), rangeOf(cfg.VRAMDropWithin), sel(sc.DCGMFBUsed), sel(sc.DCGMFBUsed), sel(sc.DCGMFBFree)))
	erroring := func(metric string) string {
		return "(" + deltaSum([]string{sc.DimEndpointName}, sel(metric), rangeOf(alertWindow)) + " > 0)"
	}
	errorsNear := labelCopy(or(erroring(sc.Invocation5XXErrors), erroring(sc.InvocationModelErrors)), lEP, sc.DimEndpointName)
	// Only GPUs whose memory fell at all are returned: on a large fleet with the usual trickle
	// of 5xx, every GPU would otherwise be a series (368 of 435 on 200 instances).
	vramDrop := "(" + gpuDrop + " > 0) and on (" + label(lEP) + ") " + errorsNear

	// AZ share: invocations per instance of each AZ over the endpoint's per-instance average;
	// an AZ with instances and no invocation series counts as zero.
	cwAZ := []string{sc.DimEndpointName, sc.DimAvailabilityZone}
	instances := sumBy(cwAZ, labelCopy(labelCopy(
		countBy([]string{lEP, lAZ}, countBy([]string{lEP, lAZ, lHost}, "last_over_time("+sel(sc.NodeMemTotal)+rangeOf(5*time.Minute)+")")),
		sc.DimEndpointName, lEP), sc.DimAvailabilityZone, lAZ))
	invocs := deltaSum(cwAZ, sel(sc.InvocationsByAzByInstanceType), rangeOf(sustainWindow))
	perInstance := "((" + invocs + " / " + instances + ") or (0 * " + instances + "))"
	fair := "(" + sumBy([]string{sc.DimEndpointName}, invocs) + " / " + sumBy([]string{sc.DimEndpointName}, instances) + ")"
	onEP := " on (" + label(sc.DimEndpointName) + ") "
	azShare := perInstance + " /" + onEP + "group_left () " + fair +
		" and" + onEP + "(" + countBy([]string{sc.DimEndpointName}, instances) + " >= 2)" +
		" and" + onEP + "(" + fair + " > 0)"

	// ICE: the share of the fleet's AZs that reported ICE for an instance type (1 = all).
	iceAZs := countBy([]string{sc.LabelEventInstanceType}, sumBy([]string{sc.LabelEventInstanceType, sc.LabelEventAZ}, "sum_over_time("+sel(sc.ICECount)+rangeOf(time.Hour)+")")+" > 0")
	fleetAZs := "scalar(" + countBy(nil, countBy([]string{lAZ}, "last_over_time("+sel(sc.DCGMGPUUtil)+rangeOf(time.Hour)+")")) + ")"
	iceShare := "(" + iceAZs + " / " + fleetAZs + ") and (" + iceAZs + " >= 2)"

	// Cold start: the average cold start of each endpoint/IC over the last hour (events are
	// sparse samples; an hour sees a few).
	coldStart := maxBy(epIC, "avg_over_time("+sel(sc.ColdStartDuration)+rangeOf(time.Hour)+")")

	// 5xx ratio per endpoint, with at least ErrorMinCount errors (one error of a quiet
	// endpoint is not an incident).
	errs := deltaSum([]string{sc.DimEndpointName}, sel(sc.Invocation5XXErrors), rangeOf(alertWindow))
	errRatio := "(" + errs + " / " + deltaSum([]string{sc.DimEndpointName}, sel(sc.Invocations), rangeOf(alertWindow)) + ")" +
		" and" + onEP + "(" + errs + " >= " + floatText(cfg.ErrorMinCount) + ")"

	// Autoscaling: load per copy against the IC's usual level (first quartile over the
	// baseline), unless a scale-out happened since the overload began.
	icDim := sc.DimInferenceComponentName
	load := maxBy([]string{icDim}, "avg_over_time("+sel(sc.ConcurrentRequestsPerCopy)+rangeOf(alertWindow)+")")
	usual := maxBy([]string{icDim}, fmt.Sprintf("quantile_over_time(0.25, %s%s)", sel(sc.ConcurrentRequestsPerCopy), rangeOf(cfg.ScalingBaseline)))
	scaleOuts := labelCopy(maxBy([]string{lIC}, "max_over_time("+sel(sc.ScalingE2EDuration, eq(sc.LabelScalingDirection, sc.ScaleOut))+rangeOf(cfg.InferredOverload()+alertWindow)+")"), icDim, lIC)
	// Requests queueing in the engine (KV saturation, a low batch cap) have their own alerts,
	// which name the limit; at that point more copies are not the whole answer, so this rule
	// covers load the engines still absorb while the policy fails to act.
	queued := labelCopy(or(waiting(sc.VLLMWaiting)+" >= "+floatText(cfg.WaitingRequests), waiting(sc.SGLangQueued)+" >= "+floatText(cfg.WaitingRequests)), icDim, lIC)
	scaling := "(" + load + " / " + usual + ") unless on (" + label(icDim) + ") " + scaleOuts + " unless on (" + label(icDim) + ") " + queued

	return []alertRule{
		{uid: "inferscope-kv-saturation", title: "KV cache saturation with waiting requests", group: groupPerformance,
			expr:   or("("+kv(sc.VLLMKVCacheUsage)+") and"+onEPIC+"("+waiting(sc.VLLMWaiting)+" >= "+floatText(cfg.WaitingRequests)+")", "("+kv(sc.SGLangTokenUsage)+") and"+onEPIC+"("+waiting(sc.SGLangQueued)+" >= "+floatText(cfg.WaitingRequests)+")"),
			window: sustainWindow, reducer: "last", op: "gt", threshold: cfg.KVSaturation, pending: 5 * time.Minute, severity: sevCritical,
			evidence: dashref.PerfEnginePressure, resource: []resourceLabel{resEndpoint, resIC}, anchor: "kv-cache-saturation",
			summary: "KV cache of {{ index $labels \"aws.sagemaker.inference_component.name\" }} on {{ index $labels \"aws.sagemaker.endpoint.name\" }} is at " + reduced("humanizePercentage") + " (P90 over 15m) with requests waiting"},
		{uid: "inferscope-engine-queueing", title: "Engine queueing (TTFT P99 up, model latency flat)", group: groupPerformance,
			expr: queueing, window: alertWindow + baselineOffset, reducer: "last", op: "gt", threshold: cfg.TTFTHigh.Seconds(), pending: 5 * time.Minute, severity: sevWarning,
			evidence: dashref.PerfTTFT, resource: []resourceLabel{resEndpoint, resIC}, anchor: "engine-queueing",
			summary: "TTFT P99 of {{ index $labels \"aws.sagemaker.inference_component.name\" }} on {{ index $labels \"aws.sagemaker.endpoint.name\" }} is " + reduced("humanizeDuration") + " while model latency and KV cache stay normal: requests wait in the engine's queue"},
		{uid: "inferscope-gpu-memory-growth", title: "GPU memory growing toward full", group: groupCapacity,
			expr: growth, window: time.Hour, reducer: "last", op: "gt", threshold: cfg.GPUMemWarnPct, pending: 10 * time.Minute, severity: sevCritical,
			evidence: dashref.CapGPUMemory, resource: []resourceLabel{resEndpoint, resIC, resInstance}, anchor: "gpu-memory-growth",
			summary: "GPU memory of {{ index $labels \"@resource.host.id\" }} is " + reduced(`printf "%.1f"`) + "% used and still growing: full within " + hoursText(cfg.TimeToFullCrit) + " at the last hour's rate"},
		{uid: "inferscope-vram-drop", title: "Sudden GPU memory drop with errors", group: groupCapacity,
			expr: vramDrop, window: alertWindow, reducer: "last", op: "gt", threshold: cfg.VRAMDropPct, pending: 0, severity: sevCritical,
			evidence: dashref.CapGPUMemory, resource: []resourceLabel{resEndpoint, resIC, resInstance}, anchor: "vram-drop-with-errors",
			summary: "GPU memory of {{ index $labels \"@resource.host.id\" }} fell by " + reduced(`printf "%.0f"`) + " points within " + durText(cfg.VRAMDropWithin) + " while {{ index $labels \"aws.sagemaker.endpoint.name\" }} returns 5xx/model errors: the model process likely crashed"},
		{uid: "inferscope-az-no-traffic", title: "AZ with instances but no traffic", group: groupReliability,
			expr: azShare, window: sustainWindow, reducer: "last", op: "lt", threshold: cfg.AZNoTrafficShare, pending: 10 * time.Minute, severity: sevCritical,
			evidence: dashref.RelAZDistribution, resource: []resourceLabel{resEndpointCW, resAZCW}, anchor: "az-with-instances-but-no-traffic",
			summary: "Instances of {{ index $labels \"EndpointName\" }} in {{ index $labels \"AvailabilityZone\" }} get " + reduced("humanizePercentage") + " of their fair share of invocations while the other AZs serve"},
		{uid: "inferscope-ice-all-azs", title: "ICE in every AZ for an instance type", group: groupReliability,
			expr: iceShare, window: time.Hour, reducer: "last", op: "gt", threshold: 0.99, pending: 0, severity: sevCritical,
			evidence: dashref.RelICE, resource: []resourceLabel{resInstType}, anchor: "ice-in-every-az",
			summary: "Insufficient-capacity errors for {{ index $labels \"aws.sagemaker.instance_type\" }} in every AZ of the fleet within the last hour: the region is out of this type"},
		{uid: "inferscope-slow-cold-start", title: "Slow cold start", group: groupReliability,
			expr: coldStart, window: time.Hour, reducer: "last", op: "gt", threshold: cfg.ColdStartSlow.Seconds(), pending: 0, severity: sevWarning,
			evidence: dashref.RelColdStart, resource: []resourceLabel{resEndpoint, resIC}, anchor: "slow-cold-start",
			summary: "Cold starts of {{ index $labels \"aws.sagemaker.inference_component.name\" }} on {{ index $labels \"aws.sagemaker.endpoint.name\" }} took " + reduced("humanizeDuration") + " on average over the last hour"},
		{uid: "inferscope-5xx-rate", title: "5XX error rate", group: groupPerformance,
			expr: errRatio, window: alertWindow, reducer: "last", op: "gt", threshold: cfg.ErrorRateCrit, pending: 5 * time.Minute, severity: sevCritical,
			evidence: dashref.PerfErrors, resource: []resourceLabel{resEndpointCW}, anchor: "5xx-error-rate",
			summary: reduced("humanizePercentage") + " of the invocations of {{ index $labels \"EndpointName\" }} failed with 5xx over the last 10 minutes"},
		{uid: "inferscope-scaling-not-firing", title: "Autoscaling not firing", group: groupReliability,
			expr: scaling, window: cfg.ScalingBaseline, reducer: "last", op: "gt", threshold: cfg.ScalingRise, pending: cfg.InferredOverload(), severity: sevWarning,
			evidence: dashref.RelScaling, resource: []resourceLabel{resICCW}, anchor: "autoscaling-not-firing",
			summary: "Load per copy of {{ index $labels \"InferenceComponentName\" }} is " + reduced(`printf "%.1f"`) + "× its usual level with no scale-out for " + durText(cfg.InferredOverload())},
	}
}

func hoursText(d time.Duration) string { return strconv.Itoa(int(d.Hours())) + " h" }
