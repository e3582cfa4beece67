package builder

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Empty states. Vended metrics (Invocations, latencies, errors, per-IC metrics) are missing
// altogether while the account's OTel enrichment is off; those panels say so rather than 0.
const (
	noVended = "No vended metrics: is OTel enrichment on? (see Save & test)"
	noICs    = "No inference components on this endpoint, or no vended metrics (OTel enrichment off)"
)

// Performance answers "is everything fine, and if not, which component is the problem?".
func Performance() *dashboard.DashboardBuilder {
	return withSLOs(newDashboard(dashref.Performance, "Inferscope · Performance",
		"Is everything fine? If not, which component is the problem?").
		WithPanel(diagnosisPanel(9)).
		WithRow(dashboard.NewRowBuilder("Summary").Id(100)).
		WithPanel(invocationsStat(10)).WithPanel(instancesStat(11)).WithPanel(icsStat(12)).
		WithPanel(gpusStat(13)).WithPanel(azSkewStat(14)).WithPanel(errorRateStat(15)).
		WithPanel(scopeTable(16)).
		WithRow(dashboard.NewRowBuilder("Fleet health").Id(110)).
		WithPanel(alarmTiles(37, dashref.Performance)).WithPanel(alarmTable(38, dashref.Performance)).
		WithPanel(perfTiles(1)).WithPanel(instanceTable(2)).
		WithRow(dashboard.NewRowBuilder("Token streaming").Id(120)).
		WithPanel(ttftPanel(dashref.PerfTTFT.ID)).WithPanel(itlPanel(dashref.PerfITL.ID)).
		WithRow(dashboard.NewRowBuilder("Latency breakdown").Id(130)).
		WithPanel(invokeLatencyPanel(dashref.PerfLatencyBreakdown.ID)).WithPanel(streamingLatencyPanel(22)).WithPanel(engineLatencyPanel(23)).
		WithRow(dashboard.NewRowBuilder("Traffic distribution").Id(140)).
		WithPanel(trafficPerAZ(dashref.PerfTraffic.ID, dashref.Performance)).WithPanel(trafficPerInstance(24)).WithPanel(trafficPerCopy(25)).
		WithRow(dashboard.NewRowBuilder("Token throughput").Id(150)).
		WithPanel(throughputByFramework(dashref.PerfThroughput.ID)).WithPanel(throughputByInstance(26)).
		WithRow(dashboard.NewRowBuilder("Engine and request pressure").Id(160)).
		WithPanel(kvPanel(dashref.PerfEnginePressure.ID)).WithPanel(runningWaitingPanel(27)).WithPanel(preemptionsPanel(28)).WithPanel(concurrencyPerCopy(29)).
		WithRow(dashboard.NewRowBuilder("Errors").Id(170)).
		WithPanel(errorsPanel(dashref.PerfErrors.ID)).WithPanel(icErrorRatioPanel(30)).
		WithRow(dashboard.NewRowBuilder("Per model").Id(180)).
		WithPanel(modelTable(31)).WithPanel(prefixCachePanel(32)).WithPanel(finishReasonsPanel(33)).WithPanel(queueTimePanel(34)).
		WithPanel(latencyHeatmap(35, "TTFT distribution", ttftPair, "time to first token")).
		WithPanel(latencyHeatmap(36, "ITL distribution", itlPair, "inter-token latency")))
}

// newDashboard carries the settings all three dashboards share.
func newDashboard(uid, title, desc string) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(title).Uid(uid).Description(desc).
		Tags([]string{Tag, "sagemaker", "llm"}).
		Time("now-6h", "now").Refresh("1m").Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).Editable().
		Links(dashboardLinks(uid)).Annotations(annotations())
	for _, v := range variables() {
		b.WithVariable(v)
	}
	return b
}

func diagnosisPanel(id uint32) *table.PanelBuilder {
	return tablePanel(id, "Diagnosis",
		"The reading rules of these dashboards, evaluated by the data source over the selected endpoint, IC and time range: "+
			"likely causes ranked, each with its evidence. Empty = no rule fired. "+
			"Next: open the panel each finding names (for example Engine pressure for a saturated KV cache)."+
			notFiltered("a diagnosis covers an endpoint or inference component as a whole, in every account the data source sees; the rules themselves name the instance or AZ they blame.",
				dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel, varAccount)).
		Height(6).WithTarget(diagnosisTarget("D")).NoValue("No likely cause found for this selection")
}

func errorRateStat(id uint32) *stat.PanelBuilder {
	ratio := "100 * " + scopedCount(errors5xxV, nil, rangeWindow) + " / " + scopedCount(invocationsV, nil, rangeWindow)
	return statPanel(id, "5XX error rate", "Share of invocations that failed with a 5XX in the time range. "+
		"Normal: below 1 %. Above 5 %: model containers are failing; check Errors below and the model's logs."+noteNoEngine, unitPercent).
		WithTarget(promInstant("A", ratio, "")).NoValue(noVended).Decimals(2).
		Thresholds(thresholds("green", step{1, "orange"}, step{5, "red"})).ColorMode(common.BigValueColorModeBackground)
}

// scopeTable is the fleet → endpoint → IC entry point: one row per endpoint and IC, with links
// that narrow this dashboard to the row's scope.
func scopeTable(id uint32) *table.PanelBuilder {
	by := withAccount(lEP, lIC)
	tb := tablePanel(id, "Endpoints and inference components",
		"Fleet → endpoint → inference component. Click an endpoint to narrow every panel to it, or an IC to narrow to that IC; variables and time range are kept. "+
			"An empty IC cell is a single-model endpoint. Copies counts (IC, container) pairs on GPUs; fewer copies than the IC's desired count means placement failed (Reliability → ICE)."+noteNoEngine).
		Height(7).SortBy(sortBy("Endpoint", false))
	return columnsTable(tb, []labelCol{
		endpointCol(dashref.Performance),
		{lIC, "Inference component", props(linksProp(icLink(dashref.Performance, rowRegion, `${__data.fields["Endpoint"]}`, "${__value.raw}"),
			icConsole(rowRegion, "${__value.raw}"), icLogs(rowRegion, "${__value.raw}")))},
	}, []valueCol{
		{countBy(by, countBy(append(by, lHost), gpu(sc.DCGMGPUUtil))), "Instances", props(prop("unit", unitShort))},
		{countBy(by, countBy(append(by, lCID, lHost), gpu(sc.DCGMGPUUtil))), "Copies", props(prop("unit", unitShort))},
		{countBy(by, gpu(sc.DCGMGPUUtil)), "GPUs", props(prop("unit", unitShort))},
	})
}

// instanceTable: one row per instance; token columns stay empty (not zero) for engines without them.
func instanceTable(id uint32) *table.PanelBuilder {
	by := []string{lHost}
	overRange := func(expr string) string { return "max_over_time((" + expr + ")[$__range:1m])" }
	ttft := props(prop("unit", unitSeconds), cellBackground(), thresholdProp("green", step{2, "orange"}, step{5, "red"}))
	tb := tablePanel(id, "Instance performance",
		"One row per instance over the time range, sorted by TTFT P99 (worst first); outliers are coloured. "+
			"TTFT P50/P99 over the range, output tokens/s average and peak, concurrent requests now and peak, requests waiting now, KV cache now. "+
			"Token, concurrency and KV columns exist only for engines that emit them (vLLM, SGLang): DJL rows show them empty, not zero. "+
			"Read: high KV cache with waiting requests = saturated (add copies or instances); high TTFT with low KV = prompt length or the model; "+
			"one slow row among equal ones = a bad host. Click an instance to filter the dashboard by it, an endpoint to open it."+
			notFiltered("the GPUs column counts every GPU of the selected ICs on the instance; GPU series carry no engine or model label.", dashref.VarFramework, dashref.VarModel)).
		Height(10).SortBy(sortBy("TTFT P99", true))
	return columnsTable(tb, instanceCols(dashref.Performance), []valueCol{
		gpusCol(gpu),
		{engineQuantile("0.5", by, ttftPair, rangeWindow), "TTFT P50", ttft},
		{engineQuantile("0.99", by, ttftPair, rangeWindow), "TTFT P99", ttft},
		{engineRate(by, generatedPair, rangeWindow), "Output tok/s avg", props(prop("unit", unitTokPerSec), prop("decimals", 0))},
		{overRange(engineRate(by, generatedPair, rateWindow)), "Output tok/s max", props(prop("unit", unitTokPerSec), prop("decimals", 0))},
		{engineGauge("sum", by, runningPair), "Concurrent", props(prop("unit", unitShort))},
		{overRange(engineGauge("sum", by, runningPair)), "Concurrent max", props(prop("unit", unitShort))},
		{engineGauge("sum", by, waitingPair), "Waiting", props(prop("unit", unitShort), cellBackground(), thresholdProp("transparent", step{1, "orange"}, step{10, "red"}))},
		{engineGauge("max", by, kvPair), "KV cache", props(prop("unit", unitRatio), prop("min", 0), prop("max", 1), cellGauge(), thresholdProp("green", step{0.8, "orange"}, step{0.95, "red"}))},
	})
}

func ttftPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Time to first token (TTFT)",
		"How long a user waits for the first token, at the selected percentile, per framework (vLLM and SGLang side by side). "+
			"Normal: flat, well under a second for chat models. Rising with Waiting requests = queueing in the engine (check Engine pressure); "+
			"rising alone with long prompts = prefill cost. Narrow by endpoint, IC or framework with the variables.", unitSeconds).
		WithTarget(promRange("A", engineQuantile(vPercentile, []string{lFW}, ttftPair, rateWindow), "TTFT {{"+lFW+"}}")).
		Thresholds(thresholds("green", step{2, "orange"}, step{5, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

func itlPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Inter-token latency (ITL)",
		"Time between streamed tokens at the selected percentile, per framework: how smooth streaming feels. "+
			"Normal: tens of milliseconds. ITL grows with the running batch; a step up with more Running requests means the batch is too large for the GPU: "+
			"cap concurrency per copy or add copies.", unitSeconds).
		WithTarget(promRange("A", engineQuantile(vPercentile, []string{lFW}, itlPair, rateWindow), "ITL {{"+lFW+"}}")).
		Thresholds(thresholds("green", step{0.1, "orange"}, step{0.25, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

const breakdownRule = " Reading rule: if model and overhead latency are both normal but TTFT is high, the engine is holding requests in its own queue " +
	"(for example waiting for KV cache slots): check Engine and request pressure."

func invokeLatencyPanel(id uint32) *timeseries.PanelBuilder {
	return stackedPanel(id, "Latency breakdown · Invocation",
		"Whole request path at the selected percentile, stacked: model latency (time in the container) and overhead latency (SageMaker routing and scheduling). "+
			"Both are delta µs histograms read with sum_over_time over 5 m, shown in ms; stacking quantiles approximates the total. "+
			"Overhead growing while model latency is flat = platform side (routing, throttling)."+breakdownRule+noteNoEngine, unitMs).
		WithTarget(promRange("A", scopedQuantileMs(vPercentile, modelLatencyV), "Model latency")).
		WithTarget(promRange("B", scopedQuantileMs(vPercentile, overheadV), "Overhead latency")).
		OverrideByName("Model latency", []dashboard.DynamicConfigValue{colorProp("blue")}).
		OverrideByName("Overhead latency", []dashboard.DynamicConfigValue{colorProp("orange")}).
		NoValue(noVended).Span(8)
}

func streamingLatencyPanel(id uint32) *timeseries.PanelBuilder {
	return stackedPanel(id, "Latency breakdown · Streaming",
		"Time to first chunk of streaming responses at the selected percentile, stacked: first-chunk model latency and first-chunk overhead (delta µs histograms, in ms). "+
			"Empty when no client streams."+breakdownRule+notFiltered("first-chunk latencies are published per endpoint and per AZ and instance type only (no IC or instance form), with no engine or model label.", dashref.VarIC, dashref.VarInstance, dashref.VarFramework, dashref.VarModel), unitMs).
		WithTarget(promRange("A", deltaQuantileMs(vPercentile, nil, firstChunk(sc.FirstChunkModelLatencyByAZ)), "First chunk · model")).
		WithTarget(promRange("B", deltaQuantileMs(vPercentile, nil, firstChunk(sc.FirstChunkOverheadLatencyByAZ)), "First chunk · overhead")).
		OverrideByName("First chunk · model", []dashboard.DynamicConfigValue{colorProp("blue")}).
		OverrideByName("First chunk · overhead", []dashboard.DynamicConfigValue{colorProp("orange")}).
		NoValue("No streaming invocations, or no vended metrics (OTel enrichment off)").Span(8)
}

// firstChunk selects a first-chunk latency in its finest published form, per AZ and
// instance type (catalog §3.5: there is no per-IC or per-instance form).
func firstChunk(metric string) string {
	return classic(metric, re(sc.DimAvailabilityZone, vAZ))
}

func engineLatencyPanel(id uint32) *timeseries.PanelBuilder {
	djl := avgBy([]string{lFW}, engine(sc.DJLRequestLatency)) + " / 1000000"
	return timeseriesPanel(id, "End-to-end latency per engine",
		"Request latency as the engine measures it, at the selected percentile (vLLM, SGLang; DJL's RequestLatency is an average). "+
			"If this is much lower than the Invocation model latency, time is lost between the platform and the engine (container proxy, serialisation).", unitSeconds).
		WithTarget(promRange("A", or(engineQuantile(vPercentile, []string{lFW}, e2ePair, rateWindow), djl), "E2E {{"+lFW+"}}")).
		Span(8)
}

// trafficPerInstance uses the classic per-instance invocations joined to the AZ of each
// instance, so that the AZ variable applies to a metric that has no AZ dimension.
func trafficPerInstance(id uint32) *timeseries.PanelBuilder {
	expr := scopedPerSecond(invocationsV, []string{sc.DimInstanceID})
	return timeseriesPanel(id, "Requests per instance (which machines serve traffic)",
		"Invocations per second per instance, restricted to the selected AZs. Normal: instances of one endpoint carry similar load. "+
			"One instance far above the others = sticky routing or fewer copies elsewhere; one at zero = it is not receiving traffic (health check, placement). "+
			"Click a series to filter the dashboard by that instance."+noteNoEngine, unitReqPerSec).
		WithTarget(promRange("A", expr, "{{"+sc.DimInstanceID+"}}")).
		OverrideByRegexp(".*", []dashboard.DynamicConfigValue{linksProp(instanceLink(dashref.Performance, fieldLabel(sc.DimInstanceID)))}).
		NoValue(noVended).Span(8)
}

func trafficPerCopy(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Requests per IC copy (which models serve traffic)",
		"Invocations per second per inference-component copy, restricted to the selected AZs. Normal: copies of one IC share load evenly. "+
			"A copy at zero while its siblings are busy is not in the routing pool; all copies of an IC saturated while others idle = rebalance copies. "+
			"Empty on single-model endpoints."+noteNoEngine, unitReqPerSec).
		WithTarget(promRange("A", sumBy([]string{sc.DimInferenceComponentName, sc.DimContainerID, sc.DimInstanceID}, vendedWindow(invocationsV.perCopy, "[5m]"))+" / 300",
			"{{"+sc.DimInferenceComponentName+"}} · {{"+sc.DimContainerID+"}}")).
		NoValue(noICs).Span(8)
}

// trafficPerAZ shows every AZ of the fleet, with zero where no request lands, so a dead AZ is a
// visible flat line at 0 rather than a missing series.
func trafficPerAZ(id uint32, uid string) *timeseries.PanelBuilder {
	expr := scopedPerSecond(invocationsV, []string{lAZ}) + " or (" + fleetAZs() + " and on () " + anyVended() + ")"
	return timeseriesPanel(id, "Requests per Availability Zone",
		"Invocations per second per AZ, with every AZ the fleet runs in drawn even at zero. "+
			"Normal: roughly proportional to the instances in each AZ. An AZ at zero while others are loaded is a routing or placement problem: "+
			"check Reliability → AZ distribution and the endpoint's instances in that AZ."+noteNoEngine, unitReqPerSec).
		WithTarget(promRange("A", expr, "{{"+lAZ+"}}")).
		Thresholds(thresholds("green")).NoValue(noVended).Span(8).
		OverrideByRegexp(".*", []dashboard.DynamicConfigValue{linksProp(link("Show this AZ", drillURL(uid, setVar{dashref.VarAZ, fieldLabel(lAZ)})))})
}

func throughputByFramework(id uint32) *timeseries.PanelBuilder {
	djl := sumBy([]string{lFW}, engine(sc.DJLTokenThroughput))
	return timeseriesPanel(id, "Token throughput per framework",
		"Input (prompt) and output (generated) tokens per second, one legend across engines (vLLM, SGLang, DJL). "+
			"Compare output tok/s with the model's benchmark: 150 observed where the benchmark says 500 means the engine is starved (low batch) or throttled (KV, preemptions). "+
			"DJL reports one throughput figure, shown with the outputs.", unitTokPerSec).
		WithTarget(promRange("A", engineRate([]string{lFW}, promptPair, rateWindow), "input {{"+lFW+"}}")).
		WithTarget(promRange("B", or(engineRate([]string{lFW}, generatedPair, rateWindow), djl), "output {{"+lFW+"}}"))
}

func throughputByInstance(id uint32) *timeseries.PanelBuilder {
	perHost := or(engineRate([]string{lHost}, generatedPair, rateWindow), sumBy([]string{lHost}, engine(sc.DJLTokenThroughput)))
	return timeseriesPanel(id, "Output tokens/s per instance and fleet percentile",
		"Output tokens per second per instance, plus the selected percentile across instances (dashed). "+
			"Instances of one model should sit close together; one far below the percentile line is a slow host or is receiving little traffic (check Requests per instance).", unitTokPerSec).
		WithTarget(promRange("A", perHost, "{{"+lHost+"}}")).
		WithTarget(promRange("B", "quantile("+vPercentile+", "+perHost+")", "fleet percentile ($percentile)")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}), prop("custom.lineWidth", 2), colorProp("white"),
		}).
		OverrideByQuery("A", []dashboard.DynamicConfigValue{linksProp(instanceLink(dashref.Performance, fieldLabel(lHost)))})
}

func kvPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "KV cache utilisation",
		"KV cache fill per engine and resource at the \"Aggregate by\" level (vLLM kv_cache_usage_perc, SGLang token_usage). "+
			"Near 100 % the engine queues or preempts requests and TTFT climbs. Early warning: KV repeatedly at 40–50 % in business hours means "+
			"set an autoscaling trigger there, before customers feel it. Exact values are in the tooltip.", unitRatio).
		WithTarget(promRange("A", byAgg("max", or(engine(kvPair.VLLM), engine(kvPair.SGLang)), lFW), "{{"+lFW+"}} · {{$agg}}")).
		Min(0).Max(1).
		Thresholds(thresholds("green", step{0.5, "orange"}, step{0.9, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeLineAndArea))
}

func runningWaitingPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Running vs waiting requests",
		"Requests in the running batch and requests waiting in the engine queue, per framework. "+
			"Normal: waiting near zero. Waiting above zero for minutes = the engine is full (usually KV cache): add copies or lower max concurrency; "+
			"if scaling should have reacted, check Reliability → Scaling events.", unitShort).
		WithTarget(promRange("A", engineGauge("sum", []string{lFW}, runningPair), "running {{"+lFW+"}}")).
		WithTarget(promRange("B", engineGauge("sum", []string{lFW}, waitingPair), "waiting {{"+lFW+"}}")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{colorProp("red")}).Min(0)
}

func preemptionsPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Preemptions and retractions",
		"vLLM preemptions per second (requests evicted from the KV cache and recomputed) and SGLang retracted requests (current count). "+
			"Normal: zero. Any sustained value means KV cache is exhausted: work is being thrown away; raise KV capacity (fewer copies per GPU, shorter max length) or add copies.", unitShort).
		WithTarget(promRange("A", sumBy([]string{lFW}, rate(engine(sc.VLLMPreemptions), rateWindow)), "preemptions/s {{"+lFW+"}}")).
		WithTarget(promRange("B", sumBy([]string{lFW}, engine(sc.SGLangRetracted)), "retracted {{"+lFW+"}}")).
		Min(0).Thresholds(thresholds("green", step{0.01, "red"}))
}

func concurrencyPerCopy(id uint32) *timeseries.PanelBuilder {
	sel := icClassic(sc.ConcurrentRequestsPerCopy)
	return timeseriesPanel(id, "Concurrent requests per IC copy",
		"SageMaker's concurrent requests per copy for each inference component (delta metric: samples in 1 m summed, divided by their count). "+
			"A common scaling target; a value above your target with no scale-out is \"autoscaling did not fire\" (Reliability → Scaling events). "+
			"Empty on single-model endpoints."+noteNoEngine, unitShort).
		WithTarget(promRange("A", onEndpointICs(sumBy([]string{sc.DimInferenceComponentName}, "sum_over_time("+sel+"[1m])")+" / "+
			sumBy([]string{sc.DimInferenceComponentName}, "count_over_time("+sel+"[1m])")), "{{"+sc.DimInferenceComponentName+"}}")).
		NoValue(noICs)
}

func errorsPanel(id uint32) *timeseries.PanelBuilder {
	djl := sumBy([]string{lFW}, rate(engine(sc.DJLResponse5XX), rateWindow))
	return timeseriesPanel(id, "Invocation errors",
		"4XX (client: bad input, throttling), 5XX (platform or container), model errors and mid-stream errors per second (delta counts over 5 m), plus DJL's container 5XX. "+
			"4XX after a client release = request shape; 5XX with model errors = the container fails (logs); 5XX without model errors = platform side or capacity."+notFiltered("mid-stream errors are published per endpoint only, and vended series carry no engine or model label (DJL's container 5XX follows every filter).", dashref.VarIC, dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel), unitReqPerSec).
		WithTarget(promRange("A", scopedPerSecond(errors4xxV, nil), "4XX")).
		WithTarget(promRange("B", scopedPerSecond(errors5xxV, nil), "5XX")).
		WithTarget(promRange("C", scopedPerSecond(modelErrorsV, nil), "model errors")).
		WithTarget(promRange("D", deltaPerSecond(nil, classic(sc.MidStreamErrors)), "mid-stream errors")).
		WithTarget(promRange("E", djl, "container 5XX {{"+lFW+"}}")).
		OverrideByName("4XX", []dashboard.DynamicConfigValue{colorProp("yellow")}).
		OverrideByName("5XX", []dashboard.DynamicConfigValue{colorProp("red")}).
		NoValue(noVended).Min(0)
}

func icErrorRatioPanel(id uint32) *timeseries.PanelBuilder {
	by := []string{sc.DimInferenceComponentName}
	ratio := func(m string) string {
		return "100 * " + sumBy(by, vendedWindow(m, "[5m]")) + " / " + sumBy(by, vendedWindow(invocationsV.perCopy, "[5m]"))
	}
	return timeseriesPanel(id, "Error rate per inference component",
		"4XX and 5XX as a share of each IC's invocations. Normal: below 1 %. One IC high while others are fine = that model or its container; "+
			"all ICs high together = the endpoint or the platform."+noteNoEngine, unitPercent).
		WithTarget(promRange("A", ratio(errors4xxV.perCopy), "4XX {{"+sc.DimInferenceComponentName+"}}")).
		WithTarget(promRange("B", ratio(errors5xxV.perCopy), "5XX {{"+sc.DimInferenceComponentName+"}}")).
		Thresholds(thresholds("green", step{1, "orange"}, step{5, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		NoValue(noICs).Min(0)
}

// Per model: the same questions asked per served model (the engines' model_name), for fleets
// where one model runs behind several endpoints or ICs.

var byModel = []string{sc.LabelModelName, lFW}

// modelTable: one row per served model and framework over the time range.
func modelTable(id uint32) *table.PanelBuilder {
	lat := func(q string, p enginePair) string { return engineQuantile(q, byModel, p, rangeWindow) }
	sec := props(prop("unit", unitSeconds), cellBackground(), thresholdProp("green", step{2, "orange"}, step{5, "red"}))
	ms := props(prop("unit", unitSeconds), prop("decimals", 3))
	tps := props(prop("unit", unitTokPerSec), prop("decimals", 0))
	errs := sumBy(byModel, or(rate(engine(sc.VLLMRequestSuccess, re(sc.LabelFinishedReason, "abort|error")), rangeWindow), rate(engine(sc.SGLangAborted), rangeWindow)))
	tb := tablePanel(id, "Models",
		"One row per served model (and framework) over the time range: requests/s (from the engine's end-to-end histogram), TTFT and ITL P50/P99, "+
			"input and output tokens/s, failed requests/s (vLLM finish reason abort or error, SGLang aborted requests) and the fullest KV cache now. "+
			"Compare a model across frameworks or against its benchmark; a model whose TTFT P99 is far above its P50 queues under bursts. "+
			"Use the Model variable to narrow every engine panel to one model.").
		Height(8).SortBy(sortBy("Requests/s", true))
	return columnsTable(tb, []labelCol{{sc.LabelModelName, "Model", nil}, {lFW, "Framework", nil}}, []valueCol{
		{sumBy(byModel, "histogram_count("+rate(engine(e2ePair.VLLM), rangeWindow)+") or histogram_count("+rate(engine(e2ePair.SGLang), rangeWindow)+")"), "Requests/s", props(prop("unit", unitReqPerSec), prop("decimals", 2))},
		{lat("0.5", ttftPair), "TTFT P50", sec},
		{lat("0.99", ttftPair), "TTFT P99", sec},
		{lat("0.5", itlPair), "ITL P50", ms},
		{lat("0.99", itlPair), "ITL P99", ms},
		{engineRate(byModel, promptPair, rangeWindow), "Input tok/s", tps},
		{engineRate(byModel, generatedPair, rangeWindow), "Output tok/s", tps},
		{errs, "Failed/s", props(prop("unit", unitReqPerSec), cellBackground(), thresholdProp("transparent", step{0.01, "orange"}, step{0.1, "red"}))},
		{engineGauge("max", byModel, kvPair), "KV cache", props(prop("unit", unitRatio), prop("min", 0), prop("max", 1), cellGauge(), thresholdProp("green", step{0.8, "orange"}, step{0.95, "red"}))},
	})
}

func prefixCachePanel(id uint32) *timeseries.PanelBuilder {
	vllm := sumBy(byModel, rate(engine(sc.VLLMPrefixHits), rateWindow)) + " / " + sumBy(byModel, rate(engine(sc.VLLMPrefixQueries), rateWindow))
	return timeseriesPanel(id, "Prefix cache hit rate",
		"Share of prompt tokens served from the prefix cache per model: vLLM's hit and query token counters, SGLang's radix-cache hit rate. "+
			"High hit rates (shared system prompts, chat history) cut prefill time and TTFT. A drop = prompts changed (new system prompt, longer unique context) "+
			"or the cache is evicted under KV pressure (check KV cache utilisation).", unitRatio).
		WithTarget(promRange("A", vllm+" or "+avgBy(byModel, engine(sc.SGLangCacheHitRate)), "{{"+sc.LabelModelName+"}} · {{"+lFW+"}}")).
		Min(0).Max(1).Span(8)
}

func finishReasonsPanel(id uint32) *timeseries.PanelBuilder {
	return stackedPanel(id, "Finish reasons",
		"Completed requests per second by why generation stopped (vLLM): stop = the model ended its answer, length = it hit max_tokens, "+
			"abort = the client went away, error = the engine failed the request. A rising length share = answers cut off (raise max_tokens or shorten prompts); "+
			"abort rising with TTFT = users give up waiting. SGLang reports only its aborted requests.", unitReqPerSec).
		WithTarget(promRange("A", sumBy([]string{sc.LabelModelName, sc.LabelFinishedReason}, rate(engine(sc.VLLMRequestSuccess), rateWindow))+" or "+
			tag(sumBy([]string{sc.LabelModelName}, rate(engine(sc.SGLangAborted), rateWindow)), sc.LabelFinishedReason, "abort"),
			"{{"+sc.LabelFinishedReason+"}} · {{"+sc.LabelModelName+"}}")).
		Span(8)
}

var queuePair = px.QueueTime

func queueTimePanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Queue time",
		"Time requests wait in the engine before they are scheduled, at the selected percentile, per model. Normal: near zero. "+
			"Rising queue time with flat model latency is the reading rule of the latency breakdown: the engine holds requests (KV cache full or concurrency cap).", unitSeconds).
		WithTarget(promRange("A", engineQuantile(vPercentile, byModel, queuePair, rateWindow), "{{"+sc.LabelModelName+"}} · {{"+lFW+"}}")).
		Span(8)
}

// latencyHeatmap draws an engine latency histogram over time from the native histogram's own
// buckets. vLLM and SGLang use different buckets, which do not add up: the heatmap shows vLLM
// when the selection has both; choose a model or framework to see the other.
func latencyHeatmap(id uint32, title string, p enginePair, what string) *heatmap.PanelBuilder {
	expr := sumBy(nil, rate(engine(p.VLLM), rateWindow)) + " or " + sumBy(nil, rate(engine(p.SGLang), rateWindow))
	return heatmap.NewPanelBuilder().Id(id).Title(title).Datasource(dsRef()).Unit(unitSeconds).Height(8).Span(12).
		Description("Distribution of " + what + " over time, from the engine's native histogram: each column is one step, darker cells hold more requests. " +
			"A second band above the usual one = a subset of requests is slow (one copy, long prompts); the whole band moving up = everything slowed. " +
			"vLLM and SGLang buckets differ and cannot be added: with both in the selection the vLLM histogram is shown; pick a Model or Framework for one engine.").
		WithTarget(promFormat("A", expr, "", prometheus.PromQueryFormatHeatmap)).
		Calculate(false).
		Color(heatmap.NewHeatmapColorOptionsBuilder().Mode(heatmap.HeatmapColorModeScheme).Scheme("Oranges").Exponent(0.5).Steps(64).Fill("dark-orange").Reverse(false)).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit(unitSeconds)).
		CellGap(1).NoValue("No engine latency histogram for this selection")
}
