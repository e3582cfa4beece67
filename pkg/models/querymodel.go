package models

import "github.com/inferscope/sagemaker-datasource/pkg/querymodel"

// The query model's names live in pkg/querymodel, where the dashboards generator and
// diagnosis read them without linking the AWS SDK; the plugin keeps reading them here.
const (
	PluginID = querymodel.PluginID

	QueryTypePromQL       = querymodel.QueryTypePromQL
	QueryTypeDiagnosis    = querymodel.QueryTypeDiagnosis
	QueryTypeAlarms       = querymodel.QueryTypeAlarms
	QueryTypeAlarmHistory = querymodel.QueryTypeAlarmHistory
	QueryTypeInventory    = querymodel.QueryTypeInventory
	QueryTypeCost         = querymodel.QueryTypeCost
	QueryTypeChanges      = querymodel.QueryTypeChanges

	FormatTable       = querymodel.FormatTable
	FormatAnnotations = querymodel.FormatAnnotations

	CostViewSpend  = querymodel.CostViewSpend
	CostViewTokens = querymodel.CostViewTokens
	CostViewIdle   = querymodel.CostViewIdle
	CostViewPrices = querymodel.CostViewPrices
	CostViewFit    = querymodel.CostViewFit

	MaxExprBytes = querymodel.MaxExprBytes
	MaxNameBytes = querymodel.MaxNameBytes
)

var (
	QueryTypes = querymodel.QueryTypes
	CostViews  = querymodel.CostViews
	CheckLen   = querymodel.CheckLen
	refName    = querymodel.RefName
)

type (
	PluginQuery   = querymodel.PluginQuery
	DataSourceRef = querymodel.DataSourceRef
)
