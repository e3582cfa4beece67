package builder

import (
	"reflect"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
)

// Query types of our datasource besides PromQL that the dashboards use, as pkg/models names
// them.
const (
	qtDiagnosis    = querymodel.QueryTypeDiagnosis
	qtAlarms       = querymodel.QueryTypeAlarms
	qtAlarmHistory = querymodel.QueryTypeAlarmHistory
	qtInventory    = querymodel.QueryTypeInventory
)

// Formats of the alarmHistory and inventory query types.
const (
	formatTable       = querymodel.FormatTable
	formatAnnotations = querymodel.FormatAnnotations
)

// PluginQuery is a target of our datasource that is not PromQL (diagnosis, alarms, alarm
// history, inventory), in pkg/models' query model: the prometheus builder would also emit an
// empty "expr", which the backend would have to special-case. Region, Endpoint and
// InferenceComponent carry the dashboard variables; the frontend interpolates them.
type PluginQuery struct{ querymodel.PluginQuery }

var _ variants.Dataquery = PluginQuery{}

func (PluginQuery) ImplementsDataqueryVariant() {}

func (PluginQuery) DataqueryType() string { return querymodel.PluginID }

func (q PluginQuery) Validate() error { return q.Check() }

func (q PluginQuery) Equals(other variants.Dataquery) bool {
	o, ok := other.(PluginQuery)
	return ok && reflect.DeepEqual(q, o)
}

// pluginQueryBuilder makes PluginQuery usable in WithTarget.
type pluginQueryBuilder struct{ q PluginQuery }

var _ cog.Builder[variants.Dataquery] = (*pluginQueryBuilder)(nil)

func (b *pluginQueryBuilder) Build() (variants.Dataquery, error) {
	if err := b.q.Validate(); err != nil {
		return nil, err
	}
	return b.q, nil
}

// scopedTarget is a plugin query of the given type scoped to the region, endpoint and IC
// variables.
func scopedTarget(refID, queryType string) *pluginQueryBuilder {
	return &pluginQueryBuilder{q: PluginQuery{querymodel.PluginQuery{
		RefID: refID, QueryType: queryType, Datasource: &querymodel.DataSourceRef{Type: querymodel.PluginID, UID: dsUID},
		Region: vRegions, Endpoint: "$" + dashref.VarEndpoint, InferenceComponent: "$" + dashref.VarIC,
	}}}
}

// diagnosisTarget runs the diagnosis rules over the selected endpoint and IC.
func diagnosisTarget(refID string) *pluginQueryBuilder { return scopedTarget(refID, qtDiagnosis) }

// alarmsTarget is the alarm state per resource; resources without any alarm get today's
// engine thresholds (marked source = "threshold").
func alarmsTarget(refID string) *pluginQueryBuilder {
	b := scopedTarget(refID, qtAlarms)
	b.q.ThresholdFallback = true
	return b
}

// historyTarget is the alarm transitions in the range, as a table or as annotations.
func historyTarget(refID, format string) *pluginQueryBuilder {
	b := scopedTarget(refID, qtAlarmHistory)
	b.q.Format = format
	return b
}

// inventoryTarget is the SageMaker inventory (variants and ICs), as a table or as
// annotations of updates and deployments.
func inventoryTarget(refID, format string) *pluginQueryBuilder {
	b := scopedTarget(refID, qtInventory)
	b.q.Format = format
	return b
}
