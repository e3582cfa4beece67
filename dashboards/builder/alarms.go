package builder

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
)

// Fields of the `alarms` frame (pkg/health) that the panels read.
const (
	fResource   = "resource"
	fEndpoint   = "endpoint"
	fIC         = "inference_component"
	fInstance   = "instance"
	fSeverity   = "severity"
	fSource     = "source"
	fConsoleURL = "console_url"
	fAlarmURL   = "alarm_url"
	fRegion     = "region"
)

// Values of the alarms frame's source field.
const sourceAlarm = "alarm"

// dataField is a data-link reference to a field of the clicked row.
func dataField(name string) string { return "${__data.fields." + name + "}" }

// Alarm state colours, by the frame's severity (3 ALARM, 2 INSUFFICIENT_DATA, 1 OK,
// 0 NO_ALARM): red, amber, green, and the light grey Insights uses for "no alarm".
const (
	colorNoAlarm      = "#c7d0d9"
	colorInsufficient = "#e0b400"
)

// severityMappings names and colours the four severities; suffix marks threshold tiles.
func severityMappings(suffix string) []dashboard.ValueMapping {
	result := func(text, color string, i int32) dashboard.ValueMappingResult {
		return dashboard.ValueMappingResult{Text: cog.ToPtr(text), Color: cog.ToPtr(color), Index: cog.ToPtr(i)}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{
		"0": result("No alarm", colorNoAlarm, 0),
		"1": result("OK"+suffix, "green", 1),
		"2": result("Insufficient data"+suffix, colorInsufficient, 2),
		"3": result("ALARM"+suffix, "red", 3),
	}}}}
}

// thresholdSuffix labels the states computed from engine thresholds, not from an alarm.
const thresholdSuffix = " (threshold)"

// severityThresholds colour a severity the mappings miss the same way.
func severityThresholds() *dashboard.ThresholdsConfigBuilder {
	return thresholds(colorNoAlarm, step{1, "green"}, step{2, colorInsufficient}, step{3, "red"})
}

// Data links from a row of the alarms and inventory frames, which name the row's
// endpoint, inference component, region and console URL. One link per scope: a data link
// cannot leave out a variable the row does not name.
func filterEndpointLink(uid string) map[string]any {
	return link("Filter by this endpoint", drillURL(uid, setVar{varRegions, dataField(fRegion)}, setVar{dashref.VarEndpoint, dataField(fEndpoint)},
		setVar{dashref.VarIC, "$__all"}, setVar{dashref.VarInstance, "$__all"}))
}

func filterICLink(uid string) map[string]any {
	return link("Filter by this inference component", drillURL(uid, setVar{varRegions, dataField(fRegion)}, setVar{dashref.VarEndpoint, dataField(fEndpoint)},
		setVar{dashref.VarIC, dataField(fIC)}, setVar{dashref.VarInstance, "$__all"}))
}

func consoleLink() map[string]any {
	return externalLink("Open in the SageMaker console", dataField(fConsoleURL))
}

func endpointLogsLink() map[string]any { return endpointLogs(dataField(fRegion), dataField(fEndpoint)) }

func icLogsLink() map[string]any { return icLogs(dataField(fRegion), dataField(fIC)) }

// Links from PromQL rows, which name the endpoint or IC but carry no console URL. region is
// the row's region (a table's Region column, an alarms or inventory row's region field).
func endpointLogs(region, name string) map[string]any {
	return externalLink("Endpoint logs in Logs Insights", logsInsightsURL(region, "/aws/sagemaker/Endpoints/"+name))
}

func icLogs(region, name string) map[string]any {
	return externalLink("Inference component logs in Logs Insights", logsInsightsURL(region, "/aws/sagemaker/InferenceComponents/"+name))
}

func endpointConsole(region, name string) map[string]any {
	return externalLink("Open in the SageMaker console", consolePage(region, "sagemaker", "/endpoints/"+name))
}

func icConsole(region, name string) map[string]any {
	return externalLink("Open in the SageMaker console", consolePage(region, "sagemaker", "/inference-components/"+name))
}

// rowRegion is the Region column of the clicked PromQL table row (columnsTable).
var rowRegion = `${__data.fields["` + colRegion + `"]}`

// resourceLinks open an alarms row's resource: this dashboard filtered to it, its SageMaker
// console page, its CloudWatch alarm, and Logs Insights on its log groups.
func resourceLinks(uid string) []map[string]any {
	return []map[string]any{
		filterEndpointLink(uid), filterICLink(uid),
		link("Filter by this instance", drillURL(uid, setVar{dashref.VarInstance, dataField(fInstance)})),
		consoleLink(), externalLink("Open the CloudWatch alarm", dataField(fAlarmURL)),
		endpointLogsLink(), icLogsLink(),
	}
}

// externalLink opens an AWS console page in a new tab.
func externalLink(title, url string) map[string]any {
	return map[string]any{"title": title, "url": url, "targetBlank": true}
}

// consolePage is a page of the AWS console in the row's region, for rows that carry no
// console URL. The origin is the hidden aws_console variable (the data source's partition;
// its host names the default region, and the console follows the region parameter).
func consolePage(region, service, fragment string) string {
	return "${" + dashref.VarConsole + "}/" + service + "/home?region=" + region + "#" + fragment
}

// logsInsightsURL opens CloudWatch Logs Insights on one log group. The console reads its
// state from the fragment, '/' spelled "*2f"; SageMaker names are [a-zA-Z0-9-], so a name
// needs no further escaping.
func logsInsightsURL(region, group string) string {
	return consolePage(region, "cloudwatch", "logsV2:logs-insights$3FqueryDetail$3D~(editorString~'fields*20*40timestamp*2c*20*40message*0a*7c*20sort*20*40timestamp*20desc~source~(~'"+
		strings.ReplaceAll(group, "/", "*2f")+"))")
}

// hiddenColumns matches the fields a table keeps for its data links but does not show: an
// organize transformation's exclusion would remove them from the frame the links read.
func hiddenColumns(names ...string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}

// alarmFilters carry no AZ, instance, engine or model: alarms belong to what CloudWatch names.
// Nor an account: DescribeAlarms answers for the data source's own account.
var noteAlarms = notFiltered("alarm state belongs to the endpoints, inference components and instances that CloudWatch alarms name; alarms carry no AZ, engine or model, and are the data source's own account's.",
	dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel, varAccount)

// rowsOf keeps, in the frames of one query, the rows whose field equals (or, exclude, does
// not equal) value.
func rowsOf(refID, field, value string, exclude bool) dashboard.DataTransformerConfig {
	mode := "include"
	if exclude {
		mode = "exclude"
	}
	return dashboard.DataTransformerConfig{
		Id:     "filterByValue",
		Filter: &dashboard.MatcherConfig{Id: "byRefId", Options: refID},
		Options: map[string]any{"type": mode, "match": "any", "filters": []map[string]any{
			{"fieldName": field, "config": map[string]any{"id": "equal", "options": map[string]any{"value": value}}},
		}},
	}
}

const alarmTilesDesc = `One tile per resource (endpoint, inference component, and instance where an alarm names it), coloured by CloudWatch alarm state as in SageMaker Insights: ` +
	`red = in ALARM, amber = insufficient data, green = OK, grey = no alarm configured. A resource's state is the worst of its alarms. ` +
	`Resources without any alarm are judged by the engine thresholds of the tiles below (KV cache, GPU memory) and say "(threshold)"; ` +
	`grey "No alarm" means neither an alarm nor an engine signal. The alarm, its reason, metric and threshold are in the table beside. ` +
	`Click a tile to filter the dashboard to that endpoint, inference component or instance, or to open it in the SageMaker console, its alarm, or its logs.`

// maxTiles bounds the alarm tiles: every endpoint, IC and alarmed instance of a large fleet.
const maxTiles = 2000

// alarmTiles is the Insights health grid: the alarms query twice (one cached call), A
// keeping the rows an alarm decides and B the threshold and no-alarm rows, so that B's
// tiles can say they come from thresholds.
func alarmTiles(id uint32, uid string) *stat.PanelBuilder {
	return tilesPanel(id, "Alarm health", alarmTilesDesc+noteAlarms, unitShort).
		WithTarget(alarmsTarget("A")).WithTarget(alarmsTarget("B")).
		Transformations([]dashboard.DataTransformerConfig{
			rowsOf("A", fSource, sourceAlarm, false),
			rowsOf("B", fSource, sourceAlarm, true),
			// severity is then the only number: a field regex would have to match the tile's
			// display name (the resource), not the field's.
			{Id: "organize", Options: map[string]any{"excludeByName": map[string]bool{"alarms": true, "threshold": true}}},
		}).
		// Every row is a tile: values, not a reduction, of the numeric field; Grafana shows
		// only 25 rows unless told otherwise.
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(true).Limit(maxTiles).Fields("").Calcs([]string{"lastNotNull"})).
		Mappings(severityMappings("")).Thresholds(severityThresholds()).Decimals(0).Span(14).
		NoValue("No endpoints in the selection, or the data source may not call cloudwatch:DescribeAlarms (see Save & test)").
		OverrideByName(fSeverity, []dashboard.DynamicConfigValue{
			prop("displayName", dataField(fResource)),
			linksProp(resourceLinks(uid)...),
		}).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{prop("mappings", severityMappings(thresholdSuffix))})
}

// alarmTable lists what the tiles' hover would show in Insights: the alarm, its reason,
// metric, threshold and last update per resource, worst first.
func alarmTable(id uint32, uid string) *table.PanelBuilder {
	order := []string{fResource, "state", fSource, "alarm", "alarms", "reason", "metric", "threshold", "updated", "resource_type"}
	index := map[string]int{}
	for i, n := range order {
		index[n] = i
	}
	rename := map[string]string{fResource: "Resource", "state": "State", fSource: "Source", "alarm": "Alarm", "alarms": "Alarms",
		"reason": "Reason", "metric": "Metric", "threshold": "Threshold", "updated": "Updated", "resource_type": "Type"}
	stateMap := map[string]dashboard.ValueMappingResult{
		"ALARM":             {Text: cog.ToPtr("ALARM"), Color: cog.ToPtr("red"), Index: cog.ToPtr[int32](0)},
		"INSUFFICIENT_DATA": {Text: cog.ToPtr("Insufficient data"), Color: cog.ToPtr(colorInsufficient), Index: cog.ToPtr[int32](1)},
		"OK":                {Text: cog.ToPtr("OK"), Color: cog.ToPtr("green"), Index: cog.ToPtr[int32](2)},
		"NO_ALARM":          {Text: cog.ToPtr("No alarm"), Color: cog.ToPtr(colorNoAlarm), Index: cog.ToPtr[int32](3)},
	}
	sourceMap := map[string]dashboard.ValueMappingResult{
		"alarm":     {Text: cog.ToPtr("CloudWatch alarm"), Index: cog.ToPtr[int32](0)},
		"threshold": {Text: cog.ToPtr("Engine threshold (no alarm)"), Index: cog.ToPtr[int32](1)},
		"none":      {Text: cog.ToPtr("None"), Index: cog.ToPtr[int32](2)},
	}
	return tablePanel(id, "Alarms",
		"Per resource, worst first: its state (the worst of its alarms), where it comes from (a CloudWatch alarm, or the engine thresholds when no alarm exists), "+
			"the worst alarm's name, the number of alarms, the reason CloudWatch gives, the metric or PromQL it watches, its threshold and when the state last changed. "+
			"Click a resource to filter the dashboard to it or open it in the SageMaker console or Logs Insights; click an alarm to open it in CloudWatch."+noteAlarms).
		WithTarget(alarmsTarget("A")).Span(10).Height(10).
		NoValue("No resources in the selection, or the data source may not call cloudwatch:DescribeAlarms (see Save & test)").
		Transformations([]dashboard.DataTransformerConfig{{Id: "organize", Options: map[string]any{
			"renameByName": rename, "indexByName": index,
		}}}).
		OverrideByRegexp(hiddenColumns(fEndpoint, fIC, fInstance, fSeverity, fConsoleURL, fAlarmURL, fRegion), []dashboard.DynamicConfigValue{prop("custom.hidden", true)}).
		OverrideByName("Resource", []dashboard.DynamicConfigValue{linksProp(resourceLinks(uid)...)}).
		OverrideByName("Alarm", []dashboard.DynamicConfigValue{linksProp(externalLink("Open the CloudWatch alarm", dataField(fAlarmURL)))}).
		OverrideByName("State", []dashboard.DynamicConfigValue{
			prop("mappings", []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: stateMap}}}),
			cellBackground(),
		}).
		OverrideByName("Source", []dashboard.DynamicConfigValue{
			prop("mappings", []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: sourceMap}}}),
		}).
		OverrideByName("Updated", []dashboard.DynamicConfigValue{prop("unit", unitDateTime)}).
		OverrideByName("Threshold", []dashboard.DynamicConfigValue{prop("unit", unitShort)})
}

// inventoryTable is the SageMaker inventory of the selection: one row per production variant
// and per inference component, with status, instances and copies against their desired
// counts, and links to the console and the logs.
func inventoryTable(id uint32, uid string) *table.PanelBuilder {
	order := []string{"kind", fEndpoint, "variant", fIC, "status", "instance_type", "instances", "desired_instances", "copies", "desired_copies", "model", "created", "modified", "failure_reason"}
	index := map[string]int{}
	for i, n := range order {
		index[n] = i
	}
	rename := map[string]string{"kind": "Kind", fEndpoint: "Endpoint", "variant": "Variant", fIC: "Inference component", "status": "Status",
		"instance_type": "Instance type", "instances": "Instances", "desired_instances": "Desired instances", "copies": "Copies",
		"desired_copies": "Desired copies", "model": "Model", "created": "Created", "modified": "Last modified", "failure_reason": "Failure reason"}
	status := map[string]dashboard.ValueMappingResult{
		"InService": {Color: cog.ToPtr("green"), Index: cog.ToPtr[int32](0)},
		"Failed":    {Color: cog.ToPtr("red"), Index: cog.ToPtr[int32](1)},
	}
	tb := tablePanel(id, "SageMaker inventory",
		"Endpoints' production variants and inference components as SageMaker describes them: status, instance type, instances and IC copies against the desired counts, "+
			"the model, creation and last-modified times and any failure reason. Fewer instances or copies than desired while the status is Updating = a scale-out in progress "+
			"(or blocked: see ICE); Failed = read the failure reason and the logs. Endpoints without GPU metrics are listed too. "+
			"Click an endpoint or IC to filter the dashboard to it, open it in the SageMaker console, or open its logs in Logs Insights."+
			notFiltered("the inventory lists the endpoints, variants and inference components of the data source's own account; instances, AZs, engines and models are not part of it.",
				dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel, varAccount)).
		WithTarget(inventoryTarget("A", formatTable)).Height(8).
		NoValue("No endpoints in the selection, or the data source may not call sagemaker:ListEndpoints (see Save & test)").
		Transformations([]dashboard.DataTransformerConfig{{Id: "organize", Options: map[string]any{
			"renameByName": rename, "indexByName": index,
		}}}).
		OverrideByRegexp(hiddenColumns(fConsoleURL, fRegion), []dashboard.DynamicConfigValue{prop("custom.hidden", true)}).
		OverrideByName("Endpoint", []dashboard.DynamicConfigValue{linksProp(filterEndpointLink(uid), consoleLink(), endpointLogsLink())}).
		OverrideByName("Inference component", []dashboard.DynamicConfigValue{linksProp(filterICLink(uid), consoleLink(), icLogsLink())}).
		OverrideByName("Status", []dashboard.DynamicConfigValue{
			prop("mappings", []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: status}}}),
			cellBackground(),
		}).
		OverrideByRegexp("^(Created|Last modified)$", []dashboard.DynamicConfigValue{prop("unit", unitDateTime)})
	return tb
}
