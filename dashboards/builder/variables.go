package builder

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Variable names; queries reference them as $name.
const (
	varDatasource = "datasource"
	varEndpoint   = "endpoint"
	varIC         = "inference_component"
	varAZ         = "az"
	varInstance   = "instance"
	varFramework  = "framework"
	varPercentile = "percentile"
	varAgg        = "agg"
)

// allVarNames lists the filter variables carried by every deep link, in display order.
var allVarNames = []string{varDatasource, varEndpoint, varIC, varAZ, varInstance, varFramework, varPercentile, varAgg}

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
func labelValuesVar(name, title, desc, selector, labelName, allValue string) *dashboard.QueryVariableBuilder {
	q := fmt.Sprintf("label_values(%s, %s)", selector, label(labelName))
	return dashboard.NewQueryVariableBuilder(name).Label(title).Description(desc).
		Datasource(dsRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).Definition(q).
		Refresh(dashboard.VariableRefreshOnDashboardLoad).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).IncludeAll(true).AllValue(allValue).Current(allOption())
}

// variables are the same on all three dashboards so deep links can carry them unchanged.
func variables() []cog.Builder[dashboard.VariableModel] {
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(varDatasource).Label("Data source").
			Description("An Inferscope SageMaker (CloudWatch PromQL) data source: one account and region.").
			Type(models.PluginID),
		labelValuesVar(varEndpoint, "Endpoint", "SageMaker endpoints that report GPU metrics.",
			sel(sc.DCGMGPUUtil), lEP, ".+"),
		// IC "All" is .* so single-model endpoints, whose series have no IC label, still match.
		labelValuesVar(varIC, "Inference component", "Inference components of the selected endpoints; empty on single-model endpoints.",
			sel(sc.DCGMGPUUtil, re(lEP, vEndpoint)), lIC, ".*"),
		labelValuesVar(varAZ, "Availability Zone", "Availability Zones the selected endpoints run in.",
			sel(sc.NodeMemTotal, re(lEP, vEndpoint)), lAZ, ".+"),
		labelValuesVar(varInstance, "Instance", "Instances of the selected endpoints in the selected AZs. Per-instance tiles and rows link here (\"filter by this instance\").",
			sel(sc.NodeMemTotal, re(lEP, vEndpoint), re(lAZ, vAZ)), lHost, ".+"),
		dashboard.NewCustomVariableBuilder(varFramework).Label("Framework").
			Description("Serving framework (engine) of the model containers.").
			Values(dashboard.StringOrMap{String: cog.ToPtr(fmt.Sprintf("vLLM : %s,SGLang : %s,DJL : %s", sc.FrameworkVLLM, sc.FrameworkSGLang, sc.FrameworkDJL))}).
			Multi(true).IncludeAll(true).AllValue(".*").Current(allOption()),
		dashboard.NewCustomVariableBuilder(varPercentile).Label("Percentile").
			Description("Quantile used by every latency panel.").
			Values(dashboard.StringOrMap{String: cog.ToPtr("P50 : 0.5,P90 : 0.9,P99 : 0.99")}).
			Current(option("P99", "0.99")),
		// The value is the bare label name: queries quote it (by ("$agg")) and legends read
		// {{$agg}}, which a quoted value would break.
		dashboard.NewCustomVariableBuilder(varAgg).Label("Aggregate by").
			Description("Aggregation level of the tiles and utilisation panels: instances, IC copies or endpoints.").
			Values(dashboard.StringOrMap{String: cog.ToPtr(fmt.Sprintf("Instances : %s,IC copies : %s,Endpoints : %s", lHost, lCID, lEP))}).
			Current(option("Instances", lHost)),
	}
}
