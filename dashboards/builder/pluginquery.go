package builder

import (
	"errors"
	"fmt"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// Query types of our datasource besides PromQL that the dashboards use, as pkg/models names
// them; the rig's dashboards test checks that the backend routes every one of them.
const (
	qtDiagnosis    = models.QueryTypeDiagnosis
	qtAlarms       = models.QueryTypeAlarms
	qtAlarmHistory = models.QueryTypeAlarmHistory
	qtInventory    = models.QueryTypeInventory
)

// PluginQueryTypes are the non-PromQL query types a generated target may carry.
var PluginQueryTypes = []string{qtDiagnosis, qtAlarms, qtAlarmHistory, qtInventory}

// Formats of the alarmHistory and inventory query types.
const (
	formatTable       = "table"
	formatAnnotations = "annotations"
)

// PluginQuery is a target of our datasource that is not PromQL (diagnosis, alarms, alarm
// history, inventory): the prometheus builder would also emit an empty "expr", which the
// backend would have to special-case, so these get their own type. Region, Endpoint and
// InferenceComponent carry the dashboard variables; the frontend interpolates them.
type PluginQuery struct {
	RefId              string                `json:"refId"`
	QueryType          string                `json:"queryType"`
	Datasource         *common.DataSourceRef `json:"datasource,omitempty"`
	Region             string                `json:"region,omitempty"`
	Endpoint           string                `json:"endpoint,omitempty"`
	InferenceComponent string                `json:"inferenceComponent,omitempty"`
	ThresholdFallback  bool                  `json:"thresholdFallback,omitempty"` // alarms only
	Format             string                `json:"format,omitempty"`            // alarmHistory and inventory only
	Hide               *bool                 `json:"hide,omitempty"`
}

var _ variants.Dataquery = PluginQuery{}

func (PluginQuery) ImplementsDataqueryVariant() {}

func (PluginQuery) DataqueryType() string { return models.PluginID }

func (q PluginQuery) Validate() error {
	if q.RefId == "" {
		return errors.New("plugin query: refId is empty; set one so the panel's result is addressable")
	}
	if !slices.Contains(PluginQueryTypes, q.QueryType) {
		return fmt.Errorf("plugin query %s: queryType %q is not one of %v", q.RefId, q.QueryType, PluginQueryTypes)
	}
	if q.ThresholdFallback && q.QueryType != qtAlarms {
		return fmt.Errorf("plugin query %s: thresholdFallback applies to alarms queries only", q.RefId)
	}
	switch q.Format {
	case "":
	case formatTable, formatAnnotations:
		if q.QueryType != qtAlarmHistory && q.QueryType != qtInventory {
			return fmt.Errorf("plugin query %s: format applies to alarmHistory and inventory queries only", q.RefId)
		}
	default:
		return fmt.Errorf("plugin query %s: format %q is neither %q nor %q", q.RefId, q.Format, formatTable, formatAnnotations)
	}
	return nil
}

func (q PluginQuery) Equals(other variants.Dataquery) bool {
	o, ok := other.(PluginQuery)
	if !ok {
		return false
	}
	sameDS := (q.Datasource == nil) == (o.Datasource == nil) &&
		(q.Datasource == nil || deref(q.Datasource.Uid) == deref(o.Datasource.Uid) && deref(q.Datasource.Type) == deref(o.Datasource.Type))
	sameHide := deref(q.Hide) == deref(o.Hide)
	return q.RefId == o.RefId && q.QueryType == o.QueryType && q.Region == o.Region && q.Endpoint == o.Endpoint &&
		q.InferenceComponent == o.InferenceComponent && q.ThresholdFallback == o.ThresholdFallback &&
		q.Format == o.Format && sameDS && sameHide
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
	ds := dsRef()
	return &pluginQueryBuilder{q: PluginQuery{
		RefId: refID, QueryType: queryType, Datasource: &ds, Region: vRegions,
		Endpoint: "$" + dashref.VarEndpoint, InferenceComponent: "$" + dashref.VarIC,
	}}
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

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
