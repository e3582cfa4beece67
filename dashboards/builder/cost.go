package builder

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
)

// costTarget is a cost query of one view over the dashboard's region, account, endpoint and
// IC selection (docs/cost.md).
func costTarget(refID, view string) *pluginQueryBuilder {
	b := scopedTarget(refID, querymodel.QueryTypeCost)
	b.q.View, b.q.Account = view, vAccount
	return b
}

// noteCost: what every cost table rests on and does not count.
const noteCost = " Prices: the instance type's hourly on-demand price in its region from the AWS Price List (pricing:GetProducts, kept a day), " +
	"or the data source's price table where it has one (Savings Plans, private pricing); the source column says which, and when. " +
	"Instances only: no storage, data transfer or discounts you have not entered. A missing price is shown as an empty cell and a warning naming it, never as $0." +
	" See docs/cost.md for the arithmetic."

// noteCostFilters: which filters a cost query follows.
var noteCostFilters = notFiltered("cost follows the GPUs and tokens of the selected endpoints, ICs and accounts; AZ, instance, engine and model filters do not apply.",
	dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel)

// costTable is a table of a cost view, its costliest rows (by the column costliest) first;
// costliest "" keeps the view's own order.
func costTable(id uint32, title, desc, view, costliest string) *table.PanelBuilder {
	b := tablePanel(id, title, desc+noteCost+noteCostFilters).
		WithTarget(costTarget("A", view)).Height(9).
		OverrideByName("Inputs", []dashboard.DynamicConfigValue{prop("custom.width", 420)})
	if costliest != "" {
		b.SortBy(sortBy(costliest, true))
	}
	return b
}

func spendTable(id uint32) *table.PanelBuilder {
	return costTable(id, "Spend per endpoint, IC and instance type",
		"What the selected instances cost over the time range: per endpoint and instance type (the whole instances, of which Idle spend is the GPUs no copy held), "+
			"and per inference component (its copies' share of the instances by GPUs held). Spend = instance-hours × price per hour; "+
			"the Inputs column writes the computation out. An IC spending much more than its traffic warrants: check Cost per million tokens.",
		querymodel.CostViewSpend, "Spend")
}

func tokenCostTable(id uint32) *table.PanelBuilder {
	return costTable(id, "Cost per million tokens (costliest first)",
		"Each model on its endpoint or IC: the spend of its copies over the range divided by the tokens they generated (output) and read (input), per million. "+
			"The costliest models per token lead: fewer copies (scale-in), a smaller instance type or a denser placement lower it. "+
			"No tokens in the range: no value (DJL endpoints export no token counters). GPUs no copy holds are idle spend, not part of any model's cost.",
		querymodel.CostViewTokens, "USD per 1M output tokens").Span(24)
}

func idleTable(id uint32) *table.PanelBuilder {
	cfg := diagnosis.DefaultConfig()
	return costTable(id, "Idle spend",
		fmt.Sprintf("Spend that served nothing: GPUs with no copy (per endpoint and instance type) and copies with near-zero traffic "+
			"(fewer than %g output tokens an hour they held GPUs), with their spend in the range and per day. "+
			"GPUs with no copy: scale instances in, or place copies there. Quiet copies: lower the IC's minimum copies. "+
			"Diagnosis reports idle capacity from $%g a day (info), a warning from $%g.", cfg.IdleQuietTokensPerHour, cfg.IdleInfoUSDPerDay, cfg.IdleWarnUSDPerDay),
		querymodel.CostViewIdle, "Idle spend per day").Span(12).
		OverrideByName("Idle spend per day", []dashboard.DynamicConfigValue{cellBackground(),
			thresholdProp("transparent", step{cfg.IdleInfoUSDPerDay, "blue"}, step{cfg.IdleWarnUSDPerDay, "orange"})})
}

func pricesTable(id uint32) *table.PanelBuilder {
	return costTable(id, "Instance prices",
		"The hourly price of each instance type the selection runs, per GPU, with its source (AWS Price List and its effective date, or the price table).",
		querymodel.CostViewPrices, "").Span(12)
}

// fitCostTable: the hourly cost of the placement the calculator proposes.
func fitCostTable(id uint32) *table.PanelBuilder {
	b := costTarget("A", querymodel.CostViewFit)
	b.q.GPUsPerCopy = "$" + dashref.VarFitGPUs
	return tablePanel(id, "What one more copy costs per hour",
		"For the copy in the inputs above (GPUs per copy): on each instance type the selection runs, its hourly share of an instance when it goes on free GPUs "+
			"(GPUs × price per GPU-hour; the instance is paid for already, so placing it there turns idle spend into a copy's spend), "+
			"and the hourly price of the new instances it needs where nothing fits (Copies that fit now = 0)."+noteCost+noteCostFilters).
		WithTarget(b).Height(8).Span(12).SortBy(sortBy("Copy on free GPUs per hour", false))
}

// spendByTagTable: the spend view summed per value of the tag key the variable names.
func spendByTagTable(id uint32) *table.PanelBuilder {
	b := costTarget("A", querymodel.CostViewSpend)
	b.q.GroupByTag = "$" + dashref.VarCostTag
	return tablePanel(id, "Spend by $"+dashref.VarCostTag,
		"The spend and idle spend of the selected instances summed per value of the resource tag in the Spend by tag box (Team unless changed), "+
			"read from the @aws.tag labels CloudWatch adds to the vended metrics (Resource tags for telemetry on; docs/configure.md). "+
			"An IC's copies count for the IC's own tag, else its endpoint's; GPUs no copy holds for the endpoint's. Resources without the tag are the untagged row. "+
			"The rows add up to the Spend table's total."+noteCost+noteCostFilters).
		WithTarget(b).Height(8).Span(12).SortBy(sortBy("Spend", true))
}
