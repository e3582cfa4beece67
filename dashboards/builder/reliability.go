package builder

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/barchart"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Reliability answers "if one AZ fails, does my fleet survive? are scaling events working?
// why are cold starts slow?".
func Reliability() *dashboard.DashboardBuilder {
	return newDashboard(dashref.Reliability, "Inferscope · Reliability",
		"If one AZ fails, does my fleet survive? Are scaling events working? Why are cold starts slow?").
		WithRow(dashboard.NewRowBuilder("Summary").Id(100)).
		WithPanel(instancesStat(10)).WithPanel(icsStat(11)).WithPanel(azSkewStat(12)).
		WithPanel(scaleEventsStat(13)).WithPanel(iceStat(14)).WithPanel(slowestColdStartStat(15)).
		WithRow(dashboard.NewRowBuilder("Availability Zone distribution").Id(110)).
		WithPanel(azDistribution(dashref.RelAZDistribution.ID)).WithPanel(azRisk(21)).WithPanel(trafficPerAZ(22, dashref.Reliability)).
		WithRow(dashboard.NewRowBuilder("Scaling events").Id(120)).
		WithPanel(scalingVsLoad(dashref.RelScaling.ID)).WithPanel(scalingTable(23)).
		WithPanel(inventoryTable(26, dashref.Reliability)).WithPanel(changesTable(27, dashref.Reliability)).
		WithRow(dashboard.NewRowBuilder("Cold start anatomy").Id(130)).
		WithPanel(coldStartBars(dashref.RelColdStart.ID)).WithPanel(coldStartAdvice(24)).
		WithRow(dashboard.NewRowBuilder("Insufficient capacity errors (ICE)").Id(140)).
		WithPanel(iceOverTime(25)).WithPanel(iceTable(dashref.RelICE.ID))
}

func scaleEventsStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Scaling events", "Scale-out and scale-in actions completed in the time range. 0 with load changes means autoscaling is not configured or not firing (see Scaling events below)."+noteScaling, unitShort).
		WithTarget(promInstant("A", "sum (count_over_time("+scalingSel("ScaleOut|ScaleIn")+rangeWindow+"))", "")).
		NoValue("0").Thresholds(thresholds("blue"))
}

func iceStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "ICE events", "Insufficient capacity errors in the time range: provisioning attempts AWS could not fill. Any value means scale-outs failed; see the ICE table."+noteICE, unitShort).
		WithTarget(promInstant("A", "sum (sum_over_time("+iceEvents()+rangeWindow+"))", "")).
		NoValue("0").Thresholds(thresholds("green", step{1, "red"})).ColorMode(common.BigValueColorModeBackground)
}

func slowestColdStartStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Slowest cold start", "Longest IC cold start (creation to first invocation) in the time range. Minutes here = scale-outs land late; see Cold start anatomy for the dominant phase."+noteColdStart, unitSeconds).
		WithTarget(promInstant("A", "max (max_over_time("+coldStartEvent(sc.ColdStartDuration)+rangeWindow+"))", "")).
		NoValue("No cold starts").Thresholds(thresholds("green", step{120, "orange"}, step{300, "red"}))
}

// azDistribution: instances and IC copies per AZ side by side; every fleet AZ appears, at zero
// when the selection has nothing there.
func azDistribution(id uint32) *barchart.PanelBuilder {
	return barchartPanel(id, "Instances and IC copies per AZ",
		"Instances (machines) and IC copies (models) per Availability Zone, side by side: instances can be balanced while IC copies crowd onto a few machines in one AZ. "+
			"Every AZ the fleet uses is listed, at zero when the selection has nothing there. Rebalance when one AZ holds most copies."+noteNoEngine, unitShort).
		WithTarget(promTable("A", instancesPerAZ()+" or "+fleetAZs())).
		WithTarget(promTable("B", icCopies(lAZ)+" or "+fleetAZs())).
		Transformations(mergeAndRename(map[string]string{lAZ: "AZ", "Value #A": "Instances", "Value #B": "IC copies"},
			[]string{lAZ, "Value #A", "Value #B"})).
		XField("AZ").Orientation(common.VizOrientationAuto).Span(10)
}

// azRisk rates each endpoint (of each account) by how many AZs its instances span.
func azRisk(id uint32) *stat.PanelBuilder {
	by := withAccount(lEP)
	azs := countBy(by, instancesPerAZ(by...))
	return multiStat(id, "AZ risk per endpoint",
		"Risk rating per endpoint from the AZs its instances span (with an inference component selected: the AZs its copies span): 3 or more AZs = Low (nothing to do); 2 AZs = Medium (rebalance, one AZ failure halves capacity); "+
			"a single AZ, i.e. every other AZ has no instance = High (one AZ failure takes the endpoint offline). "+
			"Colour is thresholds on this count."+noteNoEngine, unitShort).
		WithTarget(promInstant("A", "("+azs+" < bool 3) + ("+azs+" < bool 2)", "{{"+lEP+"}} · {{"+lAccount+"}}")).
		Mappings(stateMappings("Low", "Medium", "High")).Thresholds(stateThresholds()).
		Height(8).Span(6).NoValue("No instances")
}

// scalingSel selects scaling events of the endpoint's ICs in the given directions.
func scalingSel(directions string) string {
	return event(sc.ScalingE2EDuration, re(lIC, vIC), re(sc.LabelScalingDirection, directions))
}

// Control-plane events carry fewer labels than the series they are about.
var (
	noteScaling = notFiltered("scaling events belong to an inference component, not to an instance, AZ or engine.",
		dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel)
	noteICE = notFiltered("a failed launch has no instance, inference component or engine yet.",
		dashref.VarIC, dashref.VarInstance, dashref.VarFramework, dashref.VarModel)
	noteColdStart = notFiltered("provisioning events carry no served model name.", dashref.VarModel)
)

// coldStartEvent selects a cold-start phase of the selected ICs' copies: provisioning events
// carry the copy's host, AZ and framework.
func coldStartEvent(metric string) string {
	return event(metric, re(lIC, vIC), re(lAZ, vAZ), re(lHost, vInstance), re(lFW, vFramework))
}

// iceEvents selects ICE events in the selected AZs.
func iceEvents() string {
	return event(sc.ICECount, re(sc.LabelEventAZ, vAZ))
}

// scalingRise: load per copy this many times its usual level (the median over the range) counts
// as overload. The scaling target is not a metric; 2x the median stays quiet on a healthy
// simulated fleet at every hour of the day (1.5x, or the first quartile, fire on copies that
// merely sit at their target after a quiet night).
const scalingRise = "2"

func scalingVsLoad(id uint32) *timeseries.PanelBuilder {
	icBy := []string{sc.DimInferenceComponentName}
	load := icClassic(sc.ConcurrentRequestsPerCopy)
	perCopy := sumBy(icBy, "avg_over_time("+load+"[10m])")
	overload := scalingRise + " * " + sumBy(icBy, "quantile_over_time(0.5, "+load+rangeWindow+")")
	scaleOuts := labelCopy(sumBy([]string{lIC}, "count_over_time("+scalingSel(sc.ScaleOut)+"[30m])"),
		sc.DimInferenceComponentName, lIC)
	// Overload must hold for 15 minutes (lowest 5 m average), so bursts that scaling absorbs
	// within its normal delay do not count.
	sustained := "min_over_time(" + sumBy(icBy, "avg_over_time("+load+"[5m])") + "[15m:1m])"
	notFired := "(" + sustained + " > " + overload + ") unless on (" + label(sc.DimInferenceComponentName) + ") " + scaleOuts
	return timeseriesPanel(id, "Scaling events vs load",
		"Per inference component: concurrent requests per copy (10 m average, the metric IC autoscaling targets), its overload line "+
			"("+scalingRise+"× its usual level, the median over the range, dashed; choose a range at least twice as long as the incident), completed scale-out / scale-in actions (bars, right axis) "+
			"and a red \"did not fire\" series: load above the overload line for 15 minutes with no scale-out in the last 30 minutes. "+
			"Normal: scale-outs follow rises in load within minutes and load returns under the line. "+
			"\"Did not fire\" = no scaling policy, a policy on another metric or target, max capacity reached, or ICE blocking new instances; "+
			"a scale-out that fired while load stayed high = new capacity is still cold-starting (Cold start anatomy) or failed (ICE)."+noteICLevel, unitShort).
		WithTarget(promRange("A", onEndpointICs(perCopy), "load/copy {{"+sc.DimInferenceComponentName+"}}")).
		WithTarget(promRange("B", onEndpointICs(overload), "overload line {{"+sc.DimInferenceComponentName+"}}")).
		WithTarget(promRange("C", sumBy([]string{lIC, sc.LabelScalingDirection}, "count_over_time("+scalingSel(sc.ScaleOut+"|"+sc.ScaleIn)+"[$__interval])"),
			"{{"+sc.LabelScalingDirection+"}} {{"+lIC+"}}")).
		WithTarget(promRange("D", onEndpointICs(notFired), "did not fire {{"+sc.DimInferenceComponentName+"}}")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}), prop("custom.fillOpacity", 0)}).
		OverrideByQuery("C", []dashboard.DynamicConfigValue{
			prop("custom.drawStyle", "bars"), prop("custom.fillOpacity", 80), prop("custom.axisPlacement", "right"), prop("unit", unitShort),
		}).
		OverrideByQuery("D", []dashboard.DynamicConfigValue{colorProp("red"), prop("custom.lineWidth", 3), prop("custom.fillOpacity", 30)}).
		NoValue(noICs).Span(16).Height(9)
}

func scalingTable(id uint32) *table.PanelBuilder {
	by := withAccount(lEP, lIC, sc.LabelScalingDirection)
	events := scalingSel(sc.ScaleOut + "|" + sc.ScaleIn)
	tb := tablePanel(id, "Scaling actions",
		"Per endpoint, IC and direction: when the last action ended, how many completed in the range and how long the slowest took end to end. "+
			"Empty when Application Auto Scaling is not configured. Slow scale-outs (minutes) come from cold starts or ICE retries."+noteScaling).
		SortBy(sortBy("Last action", true)).NoValue("No scaling actions: Application Auto Scaling may not be configured").Span(8).Height(9)
	return columnsTable(tb, []labelCol{
		endpointCol(dashref.Performance),
		{lIC, "Inference component", nil},
		{sc.LabelScalingDirection, "Direction", nil},
	}, []valueCol{
		{lastEventMs(by, events), "Last action", props(prop("unit", unitDateTime))},
		{sumBy(by, "count_over_time("+events+rangeWindow+")"), "Actions", props(prop("unit", unitShort))},
		{maxBy(by, "max_over_time("+events+rangeWindow+")"), "Slowest", props(prop("unit", unitSeconds), cellBackground(), thresholdProp("green", step{120, "orange"}, step{300, "red"}))},
	})
}

// lastEventMs is the time of the latest sample of a sparse event series, in ms for the
// dateTime unit (timestamp() of a selector is the sample's own time).
func lastEventMs(by []string, selector string) string {
	return maxBy(by, "max_over_time(timestamp("+selector+")[$__range:1m])") + " * 1000"
}

// Cold-start phases, in stacking order and with the spec's colours.
var coldPhases = []struct {
	metric, name, color string
}{
	{sc.ModelDownloadTime, "Model download", "blue"},
	{sc.GPULoadTime, "GPU load", "purple"},
	{sc.ContainerStartTime, "Container start", "orange"},
}

// phaseLabel carries the name of a cold-start phase in the advice table.
const phaseLabel = "phase"

// copyLabel names one provisioning event: the IC and the container (copy) it started.
const copyLabel = "ic_copy"

// lastPhase is the last value of a cold-start phase per IC copy in the range.
func lastPhase(metric string) string {
	last := "last_over_time(" + coldStartEvent(metric) + rangeWindow + ")"
	return maxBy([]string{copyLabel}, fmt.Sprintf(`label_join(%s, %q, " · ", %q, %q)`, last, copyLabel, lIC, lCID))
}

func coldStartBars(id uint32) *barchart.PanelBuilder {
	b := barchartPanel(id, "Cold start anatomy",
		"Latest provisioning of each inference-component copy in the range, as one horizontal bar of its phases: model download (blue), GPU load (purple), "+
			"container start (orange) and platform overhead (grey, total cold start minus the three phases). "+
			"Scale: a large vLLM IC took about 238 s, mostly download; a tiny model about 41 s. Advice per dominant phase is in the panel beside."+noteColdStart, unitSeconds).
		Orientation(common.VizOrientationHorizontal).Stacking(common.StackingModeNormal).XField(copyLabel).Span(16).Height(9).
		NoValue("No inference-component cold starts in the range (single-model endpoint or no provisioning)")
	rename := map[string]string{}
	order := []string{copyLabel}
	phases := []string{}
	for i, p := range coldPhases {
		ref := string(rune('A' + i))
		b.WithTarget(promTable(ref, lastPhase(p.metric)))
		rename["Value #"+ref] = p.name
		order = append(order, "Value #"+ref)
		phases = append(phases, lastPhase(p.metric))
		b.OverrideByName(p.name, []dashboard.DynamicConfigValue{colorProp(p.color)})
	}
	overhead := "clamp_min(" + lastPhase(sc.ColdStartDuration) + " - (" + phases[0] + " + " + phases[1] + " + " + phases[2] + "), 0)"
	b.WithTarget(promTable("D", overhead))
	rename["Value #D"] = "Platform overhead"
	order = append(order, "Value #D")
	return b.Transformations(mergeAndRename(rename, order)).
		OverrideByName("Platform overhead", []dashboard.DynamicConfigValue{colorProp("grey")})
}

// coldStartAdvice names each IC's dominant phase and maps it to what to do about it.
func coldStartAdvice(id uint32) *table.PanelBuilder {
	parts := []string{}
	for _, p := range coldPhases {
		parts = append(parts, tag(lastPhase(p.metric), phaseLabel, p.name))
	}
	dominant := "topk by (" + copyLabel + ") (1, " + or(parts...) + ")"
	advice := map[string]string{
		"Model download":  "Download dominates: compress the artifacts or cache them closer (uncompressed safetensors, S3 in-region, instance storage).",
		"GPU load":        "GPU load dominates: use a smaller quantisation, faster weight formats, or keep warm copies.",
		"Container start": "Container start dominates: trim the image and its dependencies; pre-pull images.",
	}
	mapping := map[string]dashboard.ValueMappingResult{}
	for i, p := range coldPhases {
		mapping[p.name] = dashboard.ValueMappingResult{Text: cog.ToPtr(advice[p.name]), Color: cog.ToPtr(p.color), Index: cog.ToPtr(int32(i))}
	}
	tb := tablePanel(id, "Cold start advice",
		"The dominant phase of each IC copy's latest cold start and what to do about it: download → compress or cache artifacts; GPU load → smaller quantisation, warm-up; "+
			"container start → fewer dependencies. Platform overhead is not actionable by you; if it dominates, raise it with AWS."+noteColdStart).
		NoValue("No inference-component cold starts in the range").Span(8).Height(9)
	return columnsTable(tb, []labelCol{
		{copyLabel, "IC · copy", nil},
		{phaseLabel, "Advice", props(
			prop("mappings", []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: mapping}}}),
			cellBackground(),
		)},
	}, []valueCol{{dominant, "Seconds", props(prop("unit", unitSeconds))}})
}

// ICE labels: the catalog's proposal, kept in semconv.
var iceBy = []string{sc.LabelEventInstanceType, sc.LabelEventAZ}

func iceOverTime(id uint32) *timeseries.PanelBuilder {
	return barsPanel(id, "ICE count over time",
		"Insufficient capacity errors per instance type and AZ. Clustered in one AZ = try other AZs for that type; "+
			"the same type failing in every AZ = the region is out of that type: fall back to another instance type."+noteICE, unitShort).
		WithTarget(promRange("A", sumBy(iceBy, "sum_over_time("+iceEvents()+"[$__interval])"),
			"{{"+sc.LabelEventInstanceType+"}} · {{"+sc.LabelEventAZ+"}}")).
		NoValue("No ICE in the range").Min(0)
}

func iceTable(id uint32) *table.PanelBuilder {
	by := withAccount(append([]string{lEP}, iceBy...)...)
	ice := iceEvents()
	tb := tablePanel(id, "ICE events",
		"Failed provisioning attempts: last time, endpoint (click to open it), instance type, AZ and count in the range. "+
			"Reading rule: every ICE for one instance type across all AZs means the region is out of that type; fall back to another type."+noteICE).
		SortBy(sortBy("Time", true)).NoValue("No ICE in the range").Span(12)
	return columnsTable(tb, []labelCol{
		endpointCol(dashref.Performance),
		{sc.LabelEventInstanceType, "Instance type", nil},
		{sc.LabelEventAZ, "AZ", nil},
	}, []valueCol{
		{lastEventMs(by, ice), "Time", props(prop("unit", unitDateTime))},
		{sumBy(by, "sum_over_time("+ice+rangeWindow+")"), "ICE count", props(prop("unit", unitShort), cellBackground(), thresholdProp("orange", step{5, "red"}))},
	})
}
