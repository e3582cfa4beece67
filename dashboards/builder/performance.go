package builder

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

const noICs = "No inference components on this endpoint"

// Performance answers "is everything fine, and if not, which component is the problem?".
func Performance() *dashboard.DashboardBuilder {
	return withSLOs(newDashboard(UIDPerformance, "Inferscope · Performance",
		"Is everything fine? If not, which component is the problem?").
		WithPanel(diagnosisPanel(9)).
		WithRow(dashboard.NewRowBuilder("Summary").Id(100)).
		WithPanel(invocationsStat(10)).WithPanel(instancesStat(11)).WithPanel(icsStat(12)).
		WithPanel(gpusStat(13)).WithPanel(azSkewStat(14)).WithPanel(errorRateStat(15)).
		WithPanel(scopeTable(16)).
		WithRow(dashboard.NewRowBuilder("Fleet health").Id(110)).
		WithPanel(perfTiles(1)).WithPanel(instanceTable(2)).
		WithRow(dashboard.NewRowBuilder("Token streaming").Id(120)).
		WithPanel(ttftPanel(3)).WithPanel(itlPanel(21)).
		WithRow(dashboard.NewRowBuilder("Latency breakdown").Id(130)).
		WithPanel(invokeLatencyPanel(4)).WithPanel(streamingLatencyPanel(22)).WithPanel(engineLatencyPanel(23)).
		WithRow(dashboard.NewRowBuilder("Traffic distribution").Id(140)).
		WithPanel(trafficPerAZ(5, UIDPerformance)).WithPanel(trafficPerInstance(24)).WithPanel(trafficPerCopy(25)).
		WithRow(dashboard.NewRowBuilder("Token throughput").Id(150)).
		WithPanel(throughputByFramework(6)).WithPanel(throughputByInstance(26)).
		WithRow(dashboard.NewRowBuilder("Engine and request pressure").Id(160)).
		WithPanel(kvPanel(7)).WithPanel(runningWaitingPanel(27)).WithPanel(preemptionsPanel(28)).WithPanel(concurrencyPerCopy(29)).
		WithRow(dashboard.NewRowBuilder("Errors").Id(170)).
		WithPanel(errorsPanel(8)).WithPanel(icErrorRatioPanel(30)))
}

// newDashboard carries the settings all three dashboards share.
func newDashboard(uid, title, desc string) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(title).Uid(uid).Description(desc).
		Tags([]string{Tag, "sagemaker", "llm"}).
		Time("now-6h", "now").Refresh("1m").Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).Editable().
		Links(dashboardLinks(uid))
	for _, v := range variables() {
		b.WithVariable(v)
	}
	return b
}

func diagnosisPanel(id uint32) *table.PanelBuilder {
	return tablePanel(id, "Diagnosis",
		"The reading rules of these dashboards, evaluated by the data source over the selected endpoint, IC and time range: "+
			"likely causes ranked, each with its evidence. Empty = no rule fired. "+
			"Next: open the panel each finding names (for example Engine pressure for a saturated KV cache).").
		Height(6).WithTarget(diagnosisTarget("D")).NoValue("No likely cause found for this selection")
}

func errorRateStat(id uint32) *stat.PanelBuilder {
	ratio := "100 * " + deltaSum(nil, classic(sc.Invocation5XXErrors), rangeWindow) + " / " + deltaSum(nil, classic(sc.Invocations), rangeWindow)
	return statPanel(id, "5XX error rate", "Share of invocations that failed with a 5XX in the time range. "+
		"Normal: below 1 %. Above 5 %: model containers are failing; check Errors below and the model's logs.", unitPercent).
		WithTarget(promInstant("A", ratio, "")).NoValue("0").Decimals(2).
		Thresholds(thresholds("green", step{1, "orange"}, step{5, "red"})).ColorMode(common.BigValueColorModeBackground)
}

// scopeTable is the fleet → endpoint → IC entry point: one row per endpoint and IC, with links
// that narrow this dashboard to the row's scope.
func scopeTable(id uint32) *table.PanelBuilder {
	by := []string{lEP, lIC}
	tb := tablePanel(id, "Endpoints and inference components",
		"Fleet → endpoint → inference component. Click an endpoint to narrow every panel to it, or an IC to narrow to that IC; variables and time range are kept. "+
			"An empty IC cell is a single-model endpoint. Copies counts (IC, container) pairs on GPUs; fewer copies than the IC's desired count means placement failed (Reliability → ICE).").
		Height(7).SortBy(sortBy("Endpoint", false))
	return columnsTable(tb, []labelCol{
		endpointCol(UIDPerformance),
		{lIC, "Inference component", props(linksProp(icLink(UIDPerformance, `${__data.fields["Endpoint"]}`, "${__value.raw}")))},
	}, []valueCol{
		{countBy(by, countBy([]string{lEP, lIC, lHost}, gpu(sc.DCGMGPUUtil))), "Instances", props(prop("unit", unitShort))},
		{countBy(by, countBy([]string{lEP, lIC, lCID, lHost}, gpu(sc.DCGMGPUUtil))), "Copies", props(prop("unit", unitShort))},
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
			"one slow row among equal ones = a bad host. Click an instance to filter the dashboard by it, an endpoint to open it.").
		Height(10).SortBy(sortBy("TTFT P99", true))
	return columnsTable(tb, instanceCols(UIDPerformance), []valueCol{
		gpusCol(),
		{engineQuantile("0.5", by, ttftPair, rangeWindow), "TTFT P50", ttft},
		{engineQuantile("0.99", by, ttftPair, rangeWindow), "TTFT P99", ttft},
		{engineRate(by, generatedPair, rangeWindow), "Output tok/s avg", props(prop("unit", unitTokensPerSec), prop("decimals", 0))},
		{overRange(engineRate(by, generatedPair, rateWindow)), "Output tok/s max", props(prop("unit", unitTokensPerSec), prop("decimals", 0))},
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
			"Overhead growing while model latency is flat = platform side (routing, throttling)."+breakdownRule, unitMs).
		WithTarget(promRange("A", deltaQuantileMs(vPercentile, nil, classic(sc.ModelLatency)), "Model latency")).
		WithTarget(promRange("B", deltaQuantileMs(vPercentile, nil, classic(sc.OverheadLatency)), "Overhead latency")).
		OverrideByName("Model latency", []dashboard.DynamicConfigValue{colorProp("blue")}).
		OverrideByName("Overhead latency", []dashboard.DynamicConfigValue{colorProp("orange")}).
		Span(8)
}

func streamingLatencyPanel(id uint32) *timeseries.PanelBuilder {
	return stackedPanel(id, "Latency breakdown · Streaming",
		"Time to first chunk of streaming responses at the selected percentile, stacked: first-chunk model latency and first-chunk overhead (delta µs histograms, in ms). "+
			"Empty when no client streams."+breakdownRule, unitMs).
		WithTarget(promRange("A", deltaQuantileMs(vPercentile, nil, classic(sc.FirstChunkModelLatency)), "First chunk · model")).
		WithTarget(promRange("B", deltaQuantileMs(vPercentile, nil, classic(sc.FirstChunkOverheadLatency)), "First chunk · overhead")).
		OverrideByName("First chunk · model", []dashboard.DynamicConfigValue{colorProp("blue")}).
		OverrideByName("First chunk · overhead", []dashboard.DynamicConfigValue{colorProp("orange")}).
		NoValue("No streaming invocations").Span(8)
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
	perInstance := deltaPerSecond([]string{sc.DimInstanceID}, classic(sc.InvocationsByInstanceID, re(sc.DimInstanceID, vInstance)))
	expr := perInstance + " and on (" + label(sc.DimInstanceID) + ") " + hostAZ()
	return timeseriesPanel(id, "Requests per instance (which machines serve traffic)",
		"Invocations per second per instance, restricted to the selected AZs. Normal: instances of one endpoint carry similar load. "+
			"One instance far above the others = sticky routing or fewer copies elsewhere; one at zero = it is not receiving traffic (health check, placement). "+
			"Click a series to filter the dashboard by that instance.", unitReqPerSec).
		WithTarget(promRange("A", expr, "{{"+sc.DimInstanceID+"}}")).
		OverrideByRegexp(".*", []dashboard.DynamicConfigValue{linksProp(instanceLink(UIDPerformance, fieldLabel(sc.DimInstanceID)))}).
		Span(8)
}

func trafficPerCopy(id uint32) *timeseries.PanelBuilder {
	sel := classic(sc.InvocationsForICByInstanceID, re(sc.DimInferenceComponentName, vIC), re(sc.DimInstanceID, vInstance))
	return timeseriesPanel(id, "Requests per IC copy (which models serve traffic)",
		"Invocations per second per inference-component copy, restricted to the selected AZs. Normal: copies of one IC share load evenly. "+
			"A copy at zero while its siblings are busy is not in the routing pool; all copies of an IC saturated while others idle = rebalance copies. "+
			"Empty on single-model endpoints.", unitReqPerSec).
		WithTarget(promRange("A", deltaPerSecond([]string{sc.DimInferenceComponentName, sc.DimContainerID, sc.DimInstanceID}, sel)+
			" and on ("+label(sc.DimInstanceID)+") "+hostAZ(), "{{"+sc.DimInferenceComponentName+"}} · {{"+sc.DimContainerID+"}}")).
		NoValue(noICs).Span(8)
}

// trafficPerAZ shows every AZ of the fleet, with zero where no request lands, so a dead AZ is a
// visible flat line at 0 rather than a missing series.
func trafficPerAZ(id uint32, uid string) *timeseries.PanelBuilder {
	perInstance := deltaPerSecond([]string{sc.DimInstanceID}, classic(sc.InvocationsByInstanceID))
	withAZ := perInstance + " * on (" + label(sc.DimInstanceID) + ") group_left (" + label(lAZ) + ") " + hostAZ()
	expr := sumBy([]string{lAZ}, withAZ) + " or " + fleetAZs()
	return timeseriesPanel(id, "Requests per Availability Zone",
		"Invocations per second per AZ, with every AZ the fleet runs in drawn even at zero. "+
			"Normal: roughly proportional to the instances in each AZ. An AZ at zero while others are loaded is a routing or placement problem: "+
			"check Reliability → AZ distribution and the endpoint's instances in that AZ.", unitReqPerSec).
		WithTarget(promRange("A", expr, "{{"+lAZ+"}}")).
		Thresholds(thresholds("green")).Span(8).
		OverrideByRegexp(".*", []dashboard.DynamicConfigValue{linksProp(link("Show this AZ", drillURL(uid, setVar{varAZ, fieldLabel(lAZ)})))})
}

func throughputByFramework(id uint32) *timeseries.PanelBuilder {
	djl := sumBy([]string{lFW}, engine(sc.DJLTokenThroughput))
	return timeseriesPanel(id, "Token throughput per framework",
		"Input (prompt) and output (generated) tokens per second, one legend across engines (vLLM, SGLang, DJL). "+
			"Compare output tok/s with the model's benchmark: 150 observed where the benchmark says 500 means the engine is starved (low batch) or throttled (KV, preemptions). "+
			"DJL reports one throughput figure, shown with the outputs.", unitTokensPerSec).
		WithTarget(promRange("A", engineRate([]string{lFW}, promptPair, rateWindow), "input {{"+lFW+"}}")).
		WithTarget(promRange("B", or(engineRate([]string{lFW}, generatedPair, rateWindow), djl), "output {{"+lFW+"}}"))
}

func throughputByInstance(id uint32) *timeseries.PanelBuilder {
	perHost := or(engineRate([]string{lHost}, generatedPair, rateWindow), sumBy([]string{lHost}, engine(sc.DJLTokenThroughput)))
	return timeseriesPanel(id, "Output tokens/s per instance and fleet percentile",
		"Output tokens per second per instance, plus the selected percentile across instances (dashed). "+
			"Instances of one model should sit close together; one far below the percentile line is a slow host or is receiving little traffic (check Requests per instance).", unitTokensPerSec).
		WithTarget(promRange("A", perHost, "{{"+lHost+"}}")).
		WithTarget(promRange("B", "quantile("+vPercentile+", "+perHost+")", "fleet percentile ($percentile)")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}), prop("custom.lineWidth", 2), colorProp("white"),
		}).
		OverrideByQuery("A", []dashboard.DynamicConfigValue{linksProp(instanceLink(UIDPerformance, fieldLabel(lHost)))})
}

func kvPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "KV cache utilisation",
		"KV cache fill per engine and resource at the \"Aggregate by\" level (vLLM kv_cache_usage_perc, SGLang token_usage). "+
			"Near 100 % the engine queues or preempts requests and TTFT climbs. Early warning: KV repeatedly at 40–50 % in business hours means "+
			"set an autoscaling trigger there, before customers feel it. Exact values are in the tooltip.", unitRatio).
		WithTarget(promRange("A", byAgg("max", or(engine(kvPair.vllm), engine(kvPair.sglang)), lFW), "{{"+lFW+"}} · {{$agg}}")).
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
			"Empty on single-model endpoints.", unitShort).
		WithTarget(promRange("A", onEndpointICs(sumBy([]string{sc.DimInferenceComponentName}, "sum_over_time("+sel+"[1m])")+" / "+
			sumBy([]string{sc.DimInferenceComponentName}, "count_over_time("+sel+"[1m])")), "{{"+sc.DimInferenceComponentName+"}}")).
		NoValue(noICs)
}

func errorsPanel(id uint32) *timeseries.PanelBuilder {
	djl := sumBy([]string{lFW}, rate(engine(sc.DJLResponse5XX), rateWindow))
	return timeseriesPanel(id, "Invocation errors",
		"4XX (client: bad input, throttling), 5XX (platform or container), model errors and mid-stream errors per second (delta counts over 5 m), plus DJL's container 5XX. "+
			"4XX after a client release = request shape; 5XX with model errors = the container fails (logs); 5XX without model errors = platform side or capacity.", unitReqPerSec).
		WithTarget(promRange("A", deltaPerSecond(nil, classic(sc.Invocation4XXErrors)), "4XX")).
		WithTarget(promRange("B", deltaPerSecond(nil, classic(sc.Invocation5XXErrors)), "5XX")).
		WithTarget(promRange("C", deltaPerSecond(nil, classic(sc.InvocationModelErrors)), "model errors")).
		WithTarget(promRange("D", deltaPerSecond(nil, classic(sc.MidStreamErrors)), "mid-stream errors")).
		WithTarget(promRange("E", djl, "container 5XX {{"+lFW+"}}")).
		OverrideByName("4XX", []dashboard.DynamicConfigValue{colorProp("yellow")}).
		OverrideByName("5XX", []dashboard.DynamicConfigValue{colorProp("red")}).
		Min(0)
}

func icErrorRatioPanel(id uint32) *timeseries.PanelBuilder {
	by := []string{sc.DimInferenceComponentName}
	total := deltaSum(by, icClassic(sc.InvocationsForIC), "[5m]")
	ratio := func(m string) string {
		return onEndpointICs("100 * " + deltaSum(by, icClassic(m), "[5m]") + " / " + total)
	}
	return timeseriesPanel(id, "Error rate per inference component",
		"4XX and 5XX as a share of each IC's invocations. Normal: below 1 %. One IC high while others are fine = that model or its container; "+
			"all ICs high together = the endpoint or the platform.", unitPercent).
		WithTarget(promRange("A", ratio(sc.Invocation4XXErrorsForIC), "4XX {{"+sc.DimInferenceComponentName+"}}")).
		WithTarget(promRange("B", ratio(sc.Invocation5XXErrorsForIC), "5XX {{"+sc.DimInferenceComponentName+"}}")).
		Thresholds(thresholds("green", step{1, "orange"}, step{5, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		NoValue(noICs).Min(0)
}
