// Package builder holds the Performance, Capacity and Reliability dashboards as code
// (grafana-foundation-sdk): one file per dashboard, panels shared between dashboards in their
// own files (summary.go, health.go), and the panel defaults here. Uids, linked panel ids and
// variable names come from pkg/dashref.
package builder

import (
	"github.com/grafana/grafana-foundation-sdk/go/barchart"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Tag shared by the three dashboards (the "dashboards" link type lists by tag).
const Tag = "inferscope"

// Units not in the SDK's units package.
const (
	unitTokPerSec = "suffix: tok/s"
	unitDateTime  = "dateTimeAsIso"
	unitPercent   = "percent"
	unitRatio     = "percentunit"
	unitSeconds   = "s"
	unitMs        = "ms"
	unitBytes     = "bytes"
	unitShort     = "short"
	unitReqPerSec = "reqps"
)

// dsRef points every panel and target at the dashboard's datasource variable of our type.
func dsRef() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr(querymodel.PluginID), Uid: cog.ToPtr(dsUID)}
}

// dsUID is the datasource variable every query runs on.
const dsUID = "${datasource}"

// Query builders.

// Every PromQL target goes to the dashboard's regions (regions.go) and names the region in
// its legend.

// promRange is a time-series target.
func promRange(refID, expr, legend string) *promQueryBuilder {
	return promFormat(refID, expr, legend, prometheus.PromQueryFormatTimeSeries)
}

// promFormat is a range target in the given format (time series, or heatmap buckets).
func promFormat(refID, expr, legend string, format prometheus.PromQueryFormat) *promQueryBuilder {
	q := prometheus.NewDataqueryBuilder().RefId(refID).Expr(expr).Range().Datasource(dsRef())
	if format != prometheus.PromQueryFormatTimeSeries {
		q.Format(format)
	}
	if legend != "" {
		q.LegendFormat(regionLegend(legend))
	}
	return &promQueryBuilder{q}
}

// promTable is an instant target framed as a table (one row per series; the region is a
// label column).
func promTable(refID, expr string) *promQueryBuilder {
	return &promQueryBuilder{prometheus.NewDataqueryBuilder().RefId(refID).Expr(expr).Instant().
		Format(prometheus.PromQueryFormatTable).Datasource(dsRef())}
}

// promInstant is an instant target for stat-like panels; a stat without a legend is named
// by its region, which shows only when several regions answer.
func promInstant(refID, expr, legend string) *promQueryBuilder {
	if legend == "" {
		legend = "{{" + lRegion + "}}"
	} else {
		legend = regionLegend(legend)
	}
	return &promQueryBuilder{prometheus.NewDataqueryBuilder().RefId(refID).Expr(expr).Instant().Datasource(dsRef()).LegendFormat(legend)}
}

// Threshold steps: base colour then (value, colour) pairs.
type step struct {
	at    float64
	color string
}

func thresholds(base string, steps ...step) *dashboard.ThresholdsConfigBuilder {
	s := []dashboard.Threshold{{Color: base}}
	for _, st := range steps {
		s = append(s, dashboard.Threshold{Value: cog.ToPtr(st.at), Color: st.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(s)
}

// Panel defaults. Every constructor takes the explicit id (stable viewPanel links), the title
// and the reading-rule description, and points the panel at our datasource.

func timeseriesPanel(id uint32, title, desc, unit string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().Id(id).Title(title).Description(desc).Datasource(dsRef()).
		Unit(unit).Height(8).Span(12).
		LineWidth(1).FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).ShowLegend(true).Calcs([]string{"mean", "max", "lastNotNull"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
}

// stackedPanel is a timeseries whose series add up to a whole (latency parts, cold-start phases).
func stackedPanel(id uint32, title, desc, unit string) *timeseries.PanelBuilder {
	return timeseriesPanel(id, title, desc, unit).FillOpacity(60).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// barsPanel draws sparse event counts as bars.
func barsPanel(id uint32, title, desc, unit string) *timeseries.PanelBuilder {
	return timeseriesPanel(id, title, desc, unit).DrawStyle(common.GraphDrawStyleBars).FillOpacity(80).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// statPanel shows one value per returned series. Reduce and layout options are spelled out:
// one calculation per field (values: false) over every numeric field, and the auto
// orientation that lets Grafana lay several values out as a grid; an empty orientation is
// not auto, and several series then squeeze into one row or column.
func statPanel(id uint32, title, desc, unit string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Id(id).Title(title).Description(desc).Datasource(dsRef()).
		Unit(unit).Height(4).Span(4).
		GraphMode(common.BigValueGraphModeNone).ColorMode(common.BigValueColorModeValue).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(false).Fields("").Calcs([]string{"lastNotNull"}))
}

// multiStat is a stat panel drawing one named tile per series, with fixed text sizes: auto
// sizing shrinks long names in narrow tiles until they cannot be read.
func multiStat(id uint32, title, desc, unit string) *stat.PanelBuilder {
	return statPanel(id, title, desc, unit).ColorMode(common.BigValueColorModeBackground).
		TextMode(common.BigValueTextModeValueAndName).
		Text(common.NewVizTextDisplayOptionsBuilder().TitleSize(tileTitleSize).ValueSize(tileValueSize))
}

// Tile text sizes (px): a 20-character instance id fits a 160 px tile.
const (
	tileTitleSize = 13
	tileValueSize = 22
)

// tilesPanel is the health grid: one coloured tile per resource, repeat-free (each series is a
// tile), coloured by thresholds and named by the legend.
func tilesPanel(id uint32, title, desc, unit string) *stat.PanelBuilder {
	return multiStat(id, title, desc, unit).Height(10).Span(24)
}

func tablePanel(id uint32, title, desc string) *table.PanelBuilder {
	return table.NewPanelBuilder().Id(id).Title(title).Description(desc).Datasource(dsRef()).
		Height(9).Span(24).Filterable(true).ShowHeader(true).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}))
}

func barchartPanel(id uint32, title, desc, unit string) *barchart.PanelBuilder {
	return barchart.NewPanelBuilder().Id(id).Title(title).Description(desc).Datasource(dsRef()).
		Unit(unit).Height(8).Span(12).ShowValue(common.VisibilityModeAuto).FillOpacity(80).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderNone))
}

// Reasons panels give for the filters they cannot follow (see notFiltered).
var (
	noteNoEngine = notFiltered("GPU, host and vended series carry no engine or model label.", dashref.VarFramework, dashref.VarModel)
	noteMachine  = notFiltered("a machine's capacity is shared by every copy on it, and host series carry no engine or model label.",
		dashref.VarIC, dashref.VarFramework, dashref.VarModel)
	noteICLevel = notFiltered("the metric is published per inference component only, and carries no engine or model label.",
		dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel)
)

// Table helpers.

// mergeAndRename joins instant table frames into one row per entity, drops the time column
// and renames "Value #X" and label columns to readable headers.
func mergeAndRename(rename map[string]string, order []string) []dashboard.DataTransformerConfig {
	index := map[string]int{}
	for i, name := range order {
		index[name] = i
	}
	return []dashboard.DataTransformerConfig{
		{Id: "merge", Options: map[string]any{}},
		{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]bool{"Time": true},
			"renameByName":  rename,
			"indexByName":   index,
		}},
	}
}

// override property helpers (raw field-config ids as Grafana stores them).
func prop(id string, value any) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: id, Value: value}
}

func thresholdProp(base string, steps ...step) dashboard.DynamicConfigValue {
	s := []map[string]any{{"color": base, "value": nil}}
	for _, st := range steps {
		s = append(s, map[string]any{"color": st.color, "value": st.at})
	}
	return prop("thresholds", map[string]any{"mode": "absolute", "steps": s})
}

func cellBackground() dashboard.DynamicConfigValue {
	return prop("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"})
}

func cellGauge() dashboard.DynamicConfigValue {
	return prop("custom.cellOptions", map[string]any{"type": "gauge", "mode": "basic", "valueDisplayMode": "text"})
}

func colorProp(color string) dashboard.DynamicConfigValue {
	return prop("color", map[string]any{"mode": "fixed", "fixedColor": color})
}

func linksProp(links ...map[string]any) dashboard.DynamicConfigValue {
	return prop("links", links)
}

func link(title, url string) map[string]any {
	return map[string]any{"title": title, "url": url}
}

// stateMappings names the 0/1/2 health states computed by the tile queries.
func stateMappings(ok, warn, bad string) []dashboard.ValueMapping {
	return []dashboard.ValueMapping{
		{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{
			"0": {Text: cog.ToPtr(ok), Color: cog.ToPtr("green"), Index: cog.ToPtr[int32](0)},
			"1": {Text: cog.ToPtr(warn), Color: cog.ToPtr("orange"), Index: cog.ToPtr[int32](1)},
			"2": {Text: cog.ToPtr(bad), Color: cog.ToPtr("red"), Index: cog.ToPtr[int32](2)},
		}}},
	}
}

// stateThresholds colours 0/1/2 states green/orange/red.
func stateThresholds() *dashboard.ThresholdsConfigBuilder {
	return thresholds("green", step{1, "orange"}, step{2, "red"})
}

// sortBy sorts a table by one column.
func sortBy(column string, desc bool) []cog.Builder[common.TableSortByFieldState] {
	return []cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName(column).Desc(desc)}
}

// labelCol is a label shown as a table column under a readable title.
type labelCol struct {
	label, title string
	props        []dashboard.DynamicConfigValue
}

// valueCol is one instant query shown as a table column.
type valueCol struct {
	expr, title string
	props       []dashboard.DynamicConfigValue
}

// endpointCol is the endpoint label column; a click opens dashboard uid on that endpoint, or
// the endpoint in the SageMaker console or its logs in Logs Insights.
func endpointCol(uid string) labelCol {
	return labelCol{lEP, "Endpoint", props(linksProp(endpointLink(uid, rowRegion, "${__value.raw}"),
		endpointConsole(rowRegion, "${__value.raw}"), endpointLogs(rowRegion, "${__value.raw}")))}
}

// instanceCols name the instance of a per-instance row (instance, type, AZ, endpoint); a
// click filters dashboard uid by the instance or opens it on the endpoint.
func instanceCols(uid string) []labelCol {
	return []labelCol{
		{lHost, "Instance", props(linksProp(instanceLink(uid, "${__value.raw}")))},
		{lType, "Instance type", nil}, {lAZ, "AZ", nil},
		endpointCol(uid),
	}
}

// gpusCol counts the GPUs of each instanceCols row and names its account; scope is host
// (every GPU of the machine) or gpu (the GPUs of the selected ICs).
func gpusCol(scope func(string, ...string) string) valueCol {
	return valueCol{countBy(withAccount(lHost, lType, lAZ, lEP), scope(sc.DCGMGPUUtil)), "GPUs", props(prop("unit", unitShort))}
}

// regionCols follow every table's own label columns: the region each row was answered by, and
// its account where the columns' queries keep it (absent labels show no column).
var regionCols = []labelCol{{lRegion, colRegion, nil}, {lAccount, "Account", nil}}

// colRegion is the region column's title, which row links read.
const colRegion = "Region"

// columnsTable turns instant queries into one table, one row per label set: refIds A, B, …
// in column order, merged, renamed and styled per column (overrides match the new titles).
func columnsTable(tb *table.PanelBuilder, labelCols []labelCol, cols []valueCol) *table.PanelBuilder {
	rename := map[string]string{}
	order := []string{}
	for _, l := range append(append([]labelCol{}, labelCols...), regionCols...) {
		rename[l.label] = l.title
		order = append(order, l.label)
		if len(l.props) > 0 {
			tb.OverrideByName(l.title, l.props)
		}
	}
	for i, c := range cols {
		ref := string(rune('A' + i))
		valueName := "Value #" + ref
		if len(cols) == 1 {
			valueName = "Value" // Grafana names a lone table query's value column "Value"
		}
		tb.WithTarget(promTable(ref, c.expr))
		rename[valueName] = c.title
		order = append(order, valueName)
		if len(c.props) > 0 {
			tb.OverrideByName(c.title, c.props)
		}
	}
	return tb.Transformations(mergeAndRename(rename, order))
}

// props is shorthand for a column's field-config overrides.
func props(p ...dashboard.DynamicConfigValue) []dashboard.DynamicConfigValue { return p }
