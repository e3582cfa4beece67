package builder

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// varFilters is the ad-hoc filters variable.
const varFilters = dashref.VarFilters

// allVarNames lists the variables carried by every deep link, in display order.
var allVarNames = []string{dashref.VarDatasource, varRegions, varAccount, dashref.VarEndpoint, dashref.VarIC, dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel, varFilters, dashref.VarPercentile, dashref.VarAgg}

// varTitles are the variables' labels on the dashboards.
var varTitles = map[string]string{
	dashref.VarDatasource: "Data source", varRegions: "Region", varAccount: "Account", dashref.VarEndpoint: "Endpoint", dashref.VarIC: "Inference component",
	dashref.VarAZ: "Availability Zone", dashref.VarInstance: "Instance", dashref.VarFramework: "Framework",
	dashref.VarModel: "Model", dashref.VarPercentile: "Percentile", dashref.VarAgg: "Aggregate by",
}

// notFiltered ends a panel description with the filters (dashref.FilterVars) it cannot
// follow and why, so a user who narrows the dashboard knows this panel still shows more.
func notFiltered(reason string, vars ...string) string {
	names := make([]string, len(vars))
	for i, v := range vars {
		names[i] = varTitles[v]
	}
	return " " + notFilteredPrefix + strings.Join(names, ", ") + ": " + reason
}

const notFilteredPrefix = "Not filtered by "

var notFilteredNote = regexp.MustCompile(notFilteredPrefix + `([^:]+):`)

// IgnoredFilters reads back the variables a panel description says the panel cannot follow.
func IgnoredFilters(description string) map[string]bool {
	out := map[string]bool{}
	m := notFilteredNote.FindStringSubmatch(description)
	if m == nil {
		return out
	}
	for _, title := range strings.Split(m[1], ", ") {
		for name, t := range varTitles {
			if t == title {
				out[name] = true
			}
		}
	}
	return out
}

func allOption() dashboard.VariableOption {
	return option("All", "$__all")
}

func option(text, value string) dashboard.VariableOption {
	return dashboard.VariableOption{
		Selected: cog.ToPtr(true),
		Text:     dashboard.StringOrArrayOfString{String: cog.ToPtr(text)},
		Value:    dashboard.StringOrArrayOfString{String: cog.ToPtr(value)},
	}
}

// labelValuesVar is a multi-value query variable over our label-values resource. Values refresh
// on dashboard load, not on every time change: CloudWatch allows 10 discovery calls per second
// per account.
func labelValuesVar(name, desc, selector, labelName, allValue string) *dashboard.QueryVariableBuilder {
	return queryVar(name, desc, fmt.Sprintf("label_values(%s, %s)", selector, label(labelName)), allValue)
}

// queryVar is a multi-value query variable with All whose lookup is asked in the dashboard's
// regions: the stored query is an object with the classic string and the region field, as
// the query editor saves it, so Grafana also refreshes it when the region changes.
func queryVar(name, desc, q, allValue string) *dashboard.QueryVariableBuilder {
	return listVar(name, desc, q, allValue).
		Query(dashboard.StringOrMap{Map: map[string]any{"query": q, "region": vRegions}})
}

// VariableQuery reads back a query variable's stored query (decoded JSON): the classic
// string, and the region it is asked in when stored in queryVar's object form.
func VariableQuery(stored any) (query, region string) {
	switch q := stored.(type) {
	case string:
		return q, ""
	case map[string]any:
		query, _ = q["query"].(string)
		region, _ = q["region"].(string)
	}
	return query, region
}

// listVar is a multi-value query variable with All, selected on load; an empty allValue
// makes All every listed value (see labelValuesVar for the refresh).
func listVar(name, desc, q, allValue string) *dashboard.QueryVariableBuilder {
	b := dashboard.NewQueryVariableBuilder(name).Label(varTitles[name]).Description(desc).
		Datasource(dsRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).Definition(q).
		Refresh(dashboard.VariableRefreshOnDashboardLoad).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).IncludeAll(true).Current(allOption())
	if allValue != "" {
		b.AllValue(allValue)
	}
	return b
}

// settingsVar is a hidden variable the frontend answers from the data source's settings.
func settingsVar(name, query, desc string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).Description(desc).Datasource(dsRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).Definition(query).
		Refresh(dashboard.VariableRefreshOnDashboardLoad).Hide(dashboard.VariableHideHideVariable)
}

// variables are the same on all three dashboards so deep links can carry them unchanged.
func variables() []cog.Builder[dashboard.VariableModel] {
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(dashref.VarDatasource).Label(varTitles[dashref.VarDatasource]).
			Description("An Inferscope SageMaker (CloudWatch PromQL) data source: its credentials' account, or a monitoring account that sees its source accounts.").
			Type(querymodel.PluginID),
		// All = every region listed, one request per region; no allValue, which would be
		// sent as a region name.
		listVar(varRegions, "AWS regions the data source's credentials find SageMaker metrics in (else its allowed regions). Every query runs once per selected region; legends and tables name the region.",
			"regions()", ""),
		// Not filtered by itself (a variable cannot depend on itself); .* also matches
		// one-account data, whose series carry no account label.
		labelValuesVar(varAccount, "AWS accounts whose metrics the data source sees (source accounts linked to a CloudWatch monitoring account); empty with one account.",
			sel(sc.NodeMemTotal), lAccount, ".*"),
		// Endpoints from the host series every instance reports, GPU or not.
		labelValuesVar(dashref.VarEndpoint, "SageMaker endpoints with at least one instance reporting host metrics.",
			scoped(sc.NodeMemTotal), lEP, ".+"),
		// IC "All" is .* so single-model endpoints, whose series have no IC label, still match.
		labelValuesVar(dashref.VarIC, "Inference components of the selected endpoints; empty on single-model endpoints.",
			scoped(sc.DCGMGPUUtil, re(lEP, vEndpoint)), lIC, ".*"),
		labelValuesVar(dashref.VarAZ, "Availability Zones the selected endpoints run in.",
			scoped(sc.NodeMemTotal, re(lEP, vEndpoint)), lAZ, ".+"),
		labelValuesVar(dashref.VarInstance, "Instances of the selected endpoints in the selected AZs. Per-instance tiles and rows link here (\"filter by this instance\").",
			scoped(sc.NodeMemTotal, re(lEP, vEndpoint), re(lAZ, vAZ)), lHost, ".+"),
		dashboard.NewCustomVariableBuilder(dashref.VarFramework).Label(varTitles[dashref.VarFramework]).
			Description("Serving framework (engine) of the model containers.").
			Values(dashboard.StringOrMap{String: cog.ToPtr(fmt.Sprintf("vLLM : %s,SGLang : %s,DJL : %s", sc.FrameworkVLLM, sc.FrameworkSGLang, sc.FrameworkDJL))}).
			Multi(true).IncludeAll(true).AllValue(".*").Current(allOption()),
		// Served model names from both engines' running-requests gauge (a label_values call
		// takes one metric, and CloudWatch refuses a regular expression on the name).
		queryVar(dashref.VarModel, "Served model name (vLLM and SGLang model_name) of the selected endpoints and ICs. Engine panels follow it; GPU, host and vended panels cannot (no model label).",
			"query_result("+countBy([]string{sc.LabelModelName}, scoped(sc.VLLMRunning, re(lEP, vEndpoint), re(lIC, vIC)))+" or "+
				countBy([]string{sc.LabelModelName}, scoped(sc.SGLangRunning, re(lEP, vEndpoint), re(lIC, vIC)))+")", ".*").
			Regex(`/` + sc.LabelModelName + `="([^"]+)"/`),
		// Keys and values come from the data source (getTagKeys/getTagValues); each panel's
		// PromQL gets the matchers its metrics' labels allow, the diagnosis, alarm and
		// inventory panels the endpoint, IC and region filters (docs/query-editor.md).
		dashboard.NewAdHocVariableBuilder(varFilters).Label("Filters").Datasource(dsRef()).
			Description("Any label CloudWatch lists, e.g. model_name or @resource.host.type: narrows every panel whose metrics carry it; diagnosis, alarm and inventory panels follow endpoint, inference component and region filters."),
		dashboard.NewCustomVariableBuilder(dashref.VarPercentile).Label(varTitles[dashref.VarPercentile]).
			Description("Quantile used by every latency panel.").
			Values(dashboard.StringOrMap{String: cog.ToPtr("P50 : 0.5,P90 : 0.9,P99 : 0.99")}).
			Current(option("P99", "0.99")),
		settingsVar(dashref.VarConsole, "aws_console()", "The AWS console's origin in the data source's partition, for console links (which name each row's region)."),
		// The value is the bare label name: queries quote it (by ("$agg")) and legends read
		// {{$agg}}, which a quoted value would break.
		dashboard.NewCustomVariableBuilder(dashref.VarAgg).Label(varTitles[dashref.VarAgg]).
			Description("Aggregation level of the tiles and utilisation panels: instances, IC copies or endpoints.").
			Values(dashboard.StringOrMap{String: cog.ToPtr(fmt.Sprintf("Instances : %s,IC copies : %s,Endpoints : %s", lHost, lCID, lEP))}).
			Current(option("Instances", lHost)),
	}
}
