package builder

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	resAccount    = resourceLabel{"account", lAccount, varAccount}
	resGPU        = resourceLabel{"gpu", sc.LabelGPU, ""}
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
	anchor            string     // docs/alerting.md heading anchor
	summary           string     // what fired; reduced() prints the reduced value
	tags              []TagLabel // the tag labels withTags joined onto expr
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

// Windows of the alert queries. A fast window sees a step incident within minutes; the
// conditions and the short pending periods keep one late sample or a burst from paging, as
// the SLO burn-rate rules pair a fast window with a slow one.
const (
	fastWindow     = 5 * time.Minute
	alertWindow    = 10 * time.Minute
	baselineOffset = time.Hour
	// fastPending: a fast-window condition must hold this long to page.
	fastPending = 2 * time.Minute
	// leakStep × leakSteps is how long one GPU's memory must have grown without a pause
	// before the growth rule counts it; a step lies within one interval.
	leakStep  = 5 * time.Minute
	leakSteps = 3
)

// alertRules lists the reading-rule alerts; cfg supplies every threshold.
func alertRules(cfg diagnosis.Config) []alertRule {
	epIC := []string{lEP, lIC}
	kv := func(m string) string {
		return maxBy(epIC, fmt.Sprintf("quantile_over_time(%s, %s%s)", floatText(cfg.KVQuantile), sel(m), rangeOf(fastWindow)))
	}
	waiting := func(m string) string { return maxBy(epIC, "avg_over_time("+sel(m)+rangeOf(fastWindow)+")") }
	onEPIC := " on (" + labels(lEP, lIC) + ") "

	// Engine queueing: TTFT P99 per endpoint/IC, unless the KV cache explains it (the KV rule
	// fires) or the platform's model latency rose against an hour before (not the engine).
	ttft := func(p, kvm string) string {
		return "(" + quantile("0.99", epIC, sel(p), rangeOf(alertWindow)) + " >= 0) and" + onEPIC + "(" + kv(kvm) + " < " + floatText(cfg.KVSaturation) + ")"
	}
	latencyRise := func(metric, dim string) string {
		now := "histogram_quantile(0.99, " + deltaSum([]string{dim}, sel(metric), rangeOf(alertWindow)) + ")"
		before := "histogram_quantile(0.99, " + deltaSum([]string{dim}, sel(metric), rangeOf(alertWindow)+" offset "+durText(baselineOffset)) + ")"
		return "(" + now + " / (" + before + " > 0) >= " + floatText(cfg.LatencyNormal) + ")"
	}
	queueing := "(" + or(ttft(sc.VLLMTTFT, sc.VLLMKVCacheUsage), ttft(sc.SGLangTTFT, sc.SGLangTokenUsage)) + ")" +
		" unless on (" + label(lIC) + ") " + labelCopy(latencyRise(sc.ModelLatencyForIC, sc.DimInferenceComponentName), lIC, sc.DimInferenceComponentName) +
		" unless on (" + label(lEP) + ") " + labelCopy(latencyRise(sc.ModelLatency, sc.DimEndpointName), lEP, sc.DimEndpointName)

	// GPU memory per instance and IC (the IC owning the GPUs): the hours until a GPU's free
	// memory runs out at the slow window's rate, for the GPUs whose free memory fell in each
	// of the last leakSteps intervals of leakStep. Each term compares one series (one holder
	// of one GPU) with itself, so a copy joining or leaving a host (a series appearing or
	// going stale) never counts, and a copy loading is one step in one interval, not growth
	// in all of them; only a holder whose memory keeps growing (a leak) satisfies it. The
	// first GPU to fill crashes its copy, hence min.
	fbBy := []string{lEP, lIC, lHost}
	free := sel(sc.DCGMFBFree)
	offsetFree := func(k int) string {
		if k == 0 {
			return free
		}
		return free + " offset " + durText(time.Duration(k)*leakStep)
	}
	growth := "(" + free + " / (deriv(" + free + rangeOf(time.Hour) + ") * -3600 > 0))"
	for k := range leakSteps {
		growth += " and (" + offsetFree(k+1) + " - " + offsetFree(k) + " > 0)"
	}
	growth = agg("min", fbBy, growth)

	// VRAM drop: percentage points lost within VRAMDropWithin on any GPU of an instance, on
	// an endpoint returning 5xx or model errors at the same time.
	gpuDrop := maxBy(fbBy, fmt.Sprintf("100 * (max_over_time(%s%s) - %s) / (%s + %s > 0)",
		sel(sc.DCGMFBUsed), rangeOf(cfg.VRAMDropWithin), sel(sc.DCGMFBUsed), sel(sc.DCGMFBUsed), sel(sc.DCGMFBFree)))
	erroring := func(metric string) string {
		return "(" + deltaSum([]string{sc.DimEndpointName}, sel(metric), rangeOf(alertWindow)) + " > 0)"
	}
	errorsNear := labelCopy(or(erroring(sc.Invocation5XXErrors), erroring(sc.InvocationModelErrors)), lEP, sc.DimEndpointName)
	// Only GPUs whose memory fell at all are returned: on a large fleet with the usual trickle
	// of 5xx, every GPU would otherwise be a series (368 of 435 on 200 instances).
	vramDrop := "(" + gpuDrop + " > 0) and on (" + label(lEP) + ") " + errorsNear

	// GPU health per GPU: uncorrectable (double-bit) ECC errors, corrected ECC errors that
	// rose within the slow window, and a temperature held above GPUTempHot over the fast one.
	byGPU := []string{lEP, lIC, lHost, sc.LabelGPU}
	dbe := "(" + maxBy(byGPU, "max_over_time("+sel(sc.DCGMECCDBEVolatile)+rangeOf(alertWindow)+")") + " > 0)"
	sbe := func(fn string) string {
		return maxBy(byGPU, fn+"("+sel(sc.DCGMECCSBEVolatile)+rangeOf(30*time.Minute)+")")
	}
	sbeRise := "(" + sbe("max_over_time") + " - " + sbe("min_over_time") + " > 0)"
	hot := "(" + maxBy(byGPU, "min_over_time("+sel(sc.DCGMGPUTemp)+rangeOf(fastWindow)+")") + " > " + floatText(cfg.GPUTempHot) + ")"

	// AZ share: invocations per instance of each AZ over the endpoint's per-instance average,
	// over the fast window (below the threshold, the AZ has had next to nothing for all of it,
	// so it needs no pending period); an AZ with instances and no invocation series counts as
	// zero, and an endpoint with fewer than AZMinInvocations per instance is too quiet to judge.
	cwAZ := []string{sc.DimEndpointName, sc.DimAvailabilityZone}
	instances := sumBy(cwAZ, labelCopy(labelCopy(
		countBy([]string{lEP, lAZ}, countBy([]string{lEP, lAZ, lHost}, "last_over_time("+sel(sc.NodeMemTotal)+rangeOf(fastWindow)+")")),
		sc.DimEndpointName, lEP), sc.DimAvailabilityZone, lAZ))
	invocs := deltaSum(cwAZ, sel(sc.InvocationsByAzByInstanceType), rangeOf(fastWindow))
	perInstance := "((" + invocs + " / " + instances + ") or (0 * " + instances + "))"
	fair := "(" + sumBy([]string{sc.DimEndpointName}, invocs) + " / " + sumBy([]string{sc.DimEndpointName}, instances) + ")"
	onEP := " on (" + label(sc.DimEndpointName) + ") "
	azShare := perInstance + " /" + onEP + "group_left () (" + fair + " > 0)" +
		" and" + onEP + "(" + countBy([]string{sc.DimEndpointName}, instances) + " >= 2)" +
		" and" + onEP + "(" + fair + " >= " + floatText(cfg.AZMinInvocations) + ")"

	// ICE: the AZs of the fleet where launches of an instance type failed for capacity within
	// the last hour; the first one pages (they come one AZ at a time).
	ice := countBy([]string{sc.LabelEventInstanceType}, sumBy([]string{sc.LabelEventInstanceType, sc.LabelEventAZ}, "sum_over_time("+sel(sc.ICECount)+rangeOf(time.Hour)+")")+" > 0")

	// Enrichment off: per account, the instances whose GPUs work while not one vended series
	// arrived within the hour (the account switch is off, or not yet on).
	acct := []string{lAccount}
	busy := countBy(acct, "("+maxBy([]string{lAccount, lHost}, "max_over_time("+sel(sc.DCGMGPUUtil)+rangeOf(alertWindow)+")")+" > 0)")
	vended := countBy(acct, "sum_over_time("+sel(sc.Invocations)+rangeOf(time.Hour)+")")
	enrichmentOff := busy + " unless on (" + label(lAccount) + ") " + vended

	// Cold start: the average cold start of each endpoint/IC over the last hour (events are
	// sparse samples; an hour sees a few).
	coldStart := maxBy(epIC, "avg_over_time("+sel(sc.ColdStartDuration)+rangeOf(time.Hour)+")")

	// 5xx ratio per endpoint, with at least ErrorMinCount errors (one error of a quiet
	// endpoint is not an incident).
	errs := deltaSum([]string{sc.DimEndpointName}, sel(sc.Invocation5XXErrors), rangeOf(alertWindow))
	errRatio := "(" + errs + " / (" + deltaSum([]string{sc.DimEndpointName}, sel(sc.Invocations), rangeOf(alertWindow)) + " > 0))" +
		" and" + onEP + "(" + errs + " >= " + floatText(cfg.ErrorMinCount) + ")"

	// Autoscaling: load per copy over the fast window against the IC's usual level (first
	// quartile over the baseline), unless a scale-out happened within the fast window plus
	// ScalingOverload: a working policy adds copies within minutes of a rise (its cooldown
	// included), so load that stays up that long without one is the policy not acting.
	icDim := sc.DimInferenceComponentName
	load := maxBy([]string{icDim}, "avg_over_time("+sel(sc.ConcurrentRequestsPerCopy)+rangeOf(fastWindow)+")")
	usual := maxBy([]string{icDim}, fmt.Sprintf("quantile_over_time(0.25, %s%s)", sel(sc.ConcurrentRequestsPerCopy), rangeOf(cfg.ScalingBaseline)))
	scaleOuts := labelCopy(maxBy([]string{lIC}, "max_over_time("+sel(sc.ScalingE2EDuration, eq(sc.LabelScalingDirection, sc.ScaleOut))+rangeOf(cfg.ScalingOverload+fastWindow)+")"), icDim, lIC)
	// Requests queueing in the engine (KV saturation, a low batch cap) have their own alerts,
	// which name the limit; at that point more copies are not the whole answer, so this rule
	// covers load the engines still absorb while the policy fails to act.
	queued := labelCopy(or(waiting(sc.VLLMWaiting)+" >= "+floatText(cfg.WaitingRequests), waiting(sc.SGLangQueued)+" >= "+floatText(cfg.WaitingRequests)), icDim, lIC)
	scaling := "(" + load + " / (" + usual + " > 0)) unless on (" + label(icDim) + ") " + scaleOuts + " unless on (" + label(icDim) + ") " + queued

	host, ic, ep := `{{ index $labels "@resource.host.id" }}`, `{{ index $labels "aws.sagemaker.inference_component.name" }}`, `{{ index $labels "aws.sagemaker.endpoint.name" }}`
	gpuOf := `GPU {{ index $labels "gpu" }} of ` + host
	return []alertRule{
		{uid: "inferscope-kv-saturation", title: "KV cache saturation with waiting requests", group: groupPerformance,
			expr:   or("("+kv(sc.VLLMKVCacheUsage)+") and"+onEPIC+"("+waiting(sc.VLLMWaiting)+" >= "+floatText(cfg.WaitingRequests)+")", "("+kv(sc.SGLangTokenUsage)+") and"+onEPIC+"("+waiting(sc.SGLangQueued)+" >= "+floatText(cfg.WaitingRequests)+")"),
			window: fastWindow, reducer: "last", op: "gt", threshold: cfg.KVSaturation, pending: fastPending, severity: sevCritical,
			evidence: dashref.PerfEnginePressure, resource: []resourceLabel{resEndpoint, resIC}, anchor: "kv-cache-saturation",
			summary: "KV cache of " + ic + " on " + ep + " is at " + reduced("humanizePercentage") + " (P90 over " + durText(fastWindow) + ") with requests waiting"},
		{uid: "inferscope-engine-queueing", title: "Engine queueing (TTFT P99 up, model latency flat)", group: groupPerformance,
			expr: queueing, window: alertWindow + baselineOffset, reducer: "last", op: "gt", threshold: cfg.TTFTHigh.Seconds(), pending: fastPending, severity: sevWarning,
			evidence: dashref.PerfTTFT, resource: []resourceLabel{resEndpoint, resIC}, anchor: "engine-queueing",
			summary: "TTFT P99 of " + ic + " on " + ep + " is " + reduced("humanizeDuration") + " while model latency and KV cache stay normal: requests wait in the engine's queue"},
		{uid: "inferscope-gpu-memory-growth", title: "GPU memory growing toward full", group: groupCapacity,
			expr: growth, window: time.Hour, reducer: "last", op: "lt", threshold: cfg.TimeToFullCrit.Hours(), pending: fastWindow, severity: sevCritical,
			evidence: dashref.CapGPUMemory, resource: []resourceLabel{resEndpoint, resIC, resInstance}, anchor: "gpu-memory-growth",
			summary: "GPU memory of " + ic + " on " + host + " keeps growing: full in " + reduced(`printf "%.1f"`) + " h at the last hour's rate"},
		{uid: "inferscope-vram-drop", title: "Sudden GPU memory drop with errors", group: groupCapacity,
			expr: vramDrop, window: alertWindow, reducer: "last", op: "gt", threshold: cfg.VRAMDropPct, pending: 0, severity: sevCritical,
			evidence: dashref.CapGPUMemory, resource: []resourceLabel{resEndpoint, resIC, resInstance}, anchor: "vram-drop-with-errors",
			summary: "GPU memory of " + host + " fell by " + reduced(`printf "%.0f"`) + " points within " + durText(cfg.VRAMDropWithin) + " while " + ep + " returns 5xx/model errors: the model process likely crashed"},
		{uid: "inferscope-gpu-uncorrectable-ecc", title: "GPU uncorrectable memory errors", group: groupCapacity,
			expr: dbe, window: alertWindow, reducer: "last", op: "gt", threshold: 0, pending: 0, severity: sevCritical,
			evidence: dashref.CapGPUErrors, resource: []resourceLabel{resEndpoint, resIC, resInstance, resGPU}, anchor: "gpu-uncorrectable-memory-errors",
			summary: gpuOf + " reports " + reduced(`printf "%.0f"`) + " uncorrectable (double-bit) ECC error(s): the GPU is failing; drain and replace the instance"},
		{uid: "inferscope-gpu-ecc-rising", title: "GPU corrected memory errors rising", group: groupCapacity,
			expr: sbeRise, window: 30 * time.Minute, reducer: "last", op: "gt", threshold: 0, pending: 0, severity: sevWarning,
			evidence: dashref.CapGPUErrors, resource: []resourceLabel{resEndpoint, resIC, resInstance, resGPU}, anchor: "gpu-corrected-memory-errors-rising",
			summary: gpuOf + " corrected " + reduced(`printf "%.0f"`) + " ECC error(s) in the last 30m: an early sign of a failing GPU"},
		{uid: "inferscope-gpu-hot", title: "GPU running hot", group: groupCapacity,
			expr: hot, window: fastWindow, reducer: "last", op: "gt", threshold: cfg.GPUTempHot, pending: 0, severity: sevWarning,
			evidence: dashref.CapGPUThermal, resource: []resourceLabel{resEndpoint, resIC, resInstance, resGPU}, anchor: "gpu-running-hot",
			summary: gpuOf + " stayed above " + reduced(`printf "%.0f"`) + " °C for " + durText(fastWindow) + ": it throttles its clocks and the copy on it decodes slower"},
		{uid: "inferscope-az-no-traffic", title: "AZ with instances but no traffic", group: groupReliability,
			expr: azShare, window: fastWindow, reducer: "last", op: "lt", threshold: cfg.AZNoTrafficShare, pending: 0, severity: sevCritical,
			evidence: dashref.RelAZDistribution, resource: []resourceLabel{resEndpointCW, resAZCW}, anchor: "az-with-instances-but-no-traffic",
			summary: "Instances of {{ index $labels \"EndpointName\" }} in {{ index $labels \"AvailabilityZone\" }} get " + reduced("humanizePercentage") + " of their fair share of invocations while the other AZs serve"},
		{uid: "inferscope-ice", title: "Insufficient capacity for an instance type", group: groupReliability,
			expr: ice, window: time.Hour, reducer: "last", op: "gt", threshold: 0, pending: 0, severity: sevCritical,
			evidence: dashref.RelICE, resource: []resourceLabel{resInstType}, anchor: "insufficient-capacity-ice",
			summary: "Launches of {{ index $labels \"aws.sagemaker.instance_type\" }} failed for capacity in " + reduced(`printf "%.0f"`) + " AZ(s) within the last hour: scale-outs of this type fail"},
		{uid: "inferscope-enrichment-off", title: "Vended metrics missing (OTel enrichment off)", group: groupReliability,
			expr: enrichmentOff, window: time.Hour, reducer: "last", op: "gt", threshold: 0, pending: 0, severity: sevWarning,
			evidence: dashref.PerfTraffic, resource: []resourceLabel{resAccount}, anchor: "vended-metrics-missing-otel-enrichment-off",
			summary: reduced(`printf "%.0f"`) + " instance(s) of account {{ index $labels \"@aws.account\" }} have busy GPUs but no SageMaker vended metric (Invocations) arrived within the hour: turn on " + sc.EnrichmentSwitch},
		{uid: "inferscope-slow-cold-start", title: "Slow cold start", group: groupReliability,
			expr: coldStart, window: time.Hour, reducer: "last", op: "gt", threshold: cfg.ColdStartSlow.Seconds(), pending: 0, severity: sevWarning,
			evidence: dashref.RelColdStart, resource: []resourceLabel{resEndpoint, resIC}, anchor: "slow-cold-start",
			summary: "Cold starts of " + ic + " on " + ep + " took " + reduced("humanizeDuration") + " on average over the last hour"},
		{uid: "inferscope-5xx-rate", title: "5XX error rate", group: groupPerformance,
			expr: errRatio, window: alertWindow, reducer: "last", op: "gt", threshold: cfg.ErrorRateCrit, pending: fastPending, severity: sevCritical,
			evidence: dashref.PerfErrors, resource: []resourceLabel{resEndpointCW}, anchor: "5xx-error-rate",
			summary: reduced("humanizePercentage") + " of the invocations of {{ index $labels \"EndpointName\" }} failed with 5xx over the last 10 minutes"},
		{uid: "inferscope-scaling-not-firing", title: "Autoscaling not firing", group: groupReliability,
			expr: scaling, window: cfg.ScalingBaseline, reducer: "last", op: "gt", threshold: cfg.ScalingRise, pending: fastPending, severity: sevWarning,
			evidence: dashref.RelScaling, resource: []resourceLabel{resICCW}, anchor: "autoscaling-not-firing",
			summary: "Load per copy of {{ index $labels \"InferenceComponentName\" }} is " + reduced(`printf "%.1f"`) + "× its usual level with no scale-out for " + durText(cfg.ScalingOverload+fastWindow)},
	}
}

// TagLabel copies a resource tag onto its resource's alerts: the alert label Label (e.g.
// team, for a notification policy to route on) from the series label "@aws.tag.<Key>".
type TagLabel struct{ Label, Key string }

// DefaultTagLabels is what the generated rules copy: team from the Team tag.
var DefaultTagLabels = []TagLabel{{Label: "team", Key: "Team"}}

// untaggedValue is a tag label's value on an alert whose resource lacks the tag, so a
// policy can route the unowned too (as the cost query's "untagged" row).
const untaggedValue = "untagged"

var alertLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ParseTagLabels reads the generator's -alert-tags: label=Key pairs joined by ",", e.g.
// "team=Team,env=Environment"; "" copies none.
func ParseTagLabels(s string) ([]TagLabel, error) {
	var out []TagLabel
	seen := map[string]bool{"severity": true, "source": true}
	for _, r := range []resourceLabel{resEndpoint, resIC, resInstance, resAZCW, resInstType, resAccount, resGPU} {
		seen[r.alertLabel] = true
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, key, ok := strings.Cut(pair, "=")
		name, key = strings.TrimSpace(name), strings.TrimPrefix(strings.TrimSpace(key), sc.LabelTagPrefix)
		switch {
		case !ok || key == "":
			return nil, fmt.Errorf("alert tags: %q is not label=TagKey: write e.g. team=Team", pair)
		case !alertLabelName.MatchString(name) || strings.HasPrefix(name, "__"):
			return nil, fmt.Errorf("alert tags: %q is not a label name a notification policy can match: use letters, digits and _, not starting with a digit or __", name)
		case seen[name]:
			return nil, fmt.Errorf("alert tags: label %q is already an alert label (or named twice): pick another name", name)
		}
		seen[name] = true
		out = append(out, TagLabel{Label: name, Key: key})
	}
	return out, nil
}

// tagSource is the vended series that carries a resource's tags (the only family CloudWatch
// documents as enriched with them) and its name dimension.
type tagSource struct{ metric, dim string }

// tagSources: which rule resource label can be joined to which tagged series.
var tagSources = map[resourceLabel]tagSource{
	resIC:         {sc.InvocationsForIC, sc.DimInferenceComponentName},
	resICCW:       {sc.InvocationsForIC, sc.DimInferenceComponentName},
	resEndpoint:   {sc.Invocations, sc.DimEndpointName},
	resEndpointCW: {sc.Invocations, sc.DimEndpointName},
}

// tagOrder is the order in which a rule's resources lend it their tags: an IC's own before its
// endpoint's, as cost.TagOf charges them (AWS does not copy an endpoint's tags to its
// components, so a component a team tagged pages that team, and one without tags, or a
// series of no IC, pages its endpoint's).
var tagOrder = []resourceLabel{resIC, resICCW, resEndpoint, resEndpointCW}

// tagWindow is how far back a resource's tags are read: an endpoint serving nothing for
// that long writes no Invocations, and its alerts say untagged. tagFreshWindow is read
// first: topk breaks a tie by label order, not by age, so after a retag both values are in
// the hour and the old one could win for up to an hour; a resource serving now has a
// sample within minutes, and only its current tags are that recent, save for this window
// right after a retag.
const (
	tagWindow      = time.Hour
	tagFreshWindow = fastWindow
)

// withTags joins tags onto the rule's series through its resources in tagOrder: each series
// is multiplied by 1 from its resource's tagged series (topk keeps one per resource, the
// newest window's first, so a retag cannot make the match many-to-many); a resource followed by another
// joins only series that carry one of the tags, so an untagged IC defers to its endpoint;
// `or on` the joined resources keeps each series once, from the first join that matched it,
// and the series of resources without any as they are, so values, firing and NaN are what
// they were without the join. A rule none of whose resources can be joined is returned as it is.
func withTags(s alertRule, tags []TagLabel) alertRule {
	if len(tags) == 0 {
		return s
	}
	names := make([]string, len(tags))
	for i, t := range tags {
		names[i] = sc.LabelTagPrefix + t.Key
	}
	var joins []resourceLabel
	for _, r := range tagOrder {
		if slices.Contains(s.resource, r) {
			joins = append(joins, r)
		}
	}
	if len(joins) == 0 {
		return s
	}
	keys := make([]string, len(joins))
	for i, r := range joins {
		keys[i] = r.seriesLabel
	}
	orOn := " or on (" + labels(keys...) + ") "
	expr := ""
	for i, r := range joins {
		src := tagSources[r]
		newest := func(w time.Duration) string {
			return "topk by (" + label(src.dim) + ") (1, " + agg("group", append([]string{src.dim}, names...), tagSeries(src.metric, names, i < len(joins)-1, w)) + ")"
		}
		owned := "(" + newest(tagFreshWindow) + " or on (" + label(src.dim) + ") " + newest(tagWindow) + ")"
		if r.seriesLabel != src.dim {
			owned = labelCopy(owned, r.seriesLabel, src.dim)
		}
		expr += "((" + s.expr + ") * on (" + label(r.seriesLabel) + ") group_left (" + labels(names...) + ") " + owned + ")" + orOn
	}
	s.expr = expr + "(" + s.expr + ")"
	s.window = max(s.window, tagWindow)
	s.tags = tags
	return s
}

// tagSeries is the last sample of each tagged series of metric within w; with required,
// only the series that carry at least one of the tag labels named.
func tagSeries(metric string, names []string, required bool, w time.Duration) string {
	last := func(matchers ...string) string {
		return "last_over_time(" + sel(metric, matchers...) + rangeOf(w) + ")"
	}
	if !required {
		return last()
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = last(neq(n, ""))
	}
	return or(parts...)
}

// tagLabelRef is an alert label's value from the series' tag label, untaggedValue without.
func tagLabelRef(t TagLabel) string {
	return "{{ with index $labels " + strconv.Quote(sc.LabelTagPrefix+t.Key) + " }}{{ . }}{{ else }}" + untaggedValue + "{{ end }}"
}
