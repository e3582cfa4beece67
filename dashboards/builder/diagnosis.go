package builder

import (
	"errors"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// DiagnosisQuery is a target of our datasource that runs the diagnosis rules over the selected
// scope. The prometheus builder would also emit an empty "expr", which the backend would have
// to special-case, so it gets its own type.
type DiagnosisQuery struct {
	RefId              string                `json:"refId"`
	QueryType          string                `json:"queryType"`
	Datasource         *common.DataSourceRef `json:"datasource,omitempty"`
	Endpoint           string                `json:"endpoint,omitempty"`
	InferenceComponent string                `json:"inferenceComponent,omitempty"`
	Hide               *bool                 `json:"hide,omitempty"`
}

var _ variants.Dataquery = DiagnosisQuery{}

func (DiagnosisQuery) ImplementsDataqueryVariant() {}

func (DiagnosisQuery) DataqueryType() string { return models.PluginID }

func (q DiagnosisQuery) Validate() error {
	if q.RefId == "" {
		return errors.New("diagnosis query: refId is empty; set one so the panel's result is addressable")
	}
	if q.QueryType != models.QueryTypeDiagnosis {
		return errors.New(`diagnosis query: queryType must be "diagnosis"`)
	}
	return nil
}

func (q DiagnosisQuery) Equals(other variants.Dataquery) bool {
	o, ok := other.(DiagnosisQuery)
	if !ok {
		return false
	}
	sameDS := (q.Datasource == nil) == (o.Datasource == nil) &&
		(q.Datasource == nil || deref(q.Datasource.Uid) == deref(o.Datasource.Uid) && deref(q.Datasource.Type) == deref(o.Datasource.Type))
	sameHide := deref(q.Hide) == deref(o.Hide)
	return q.RefId == o.RefId && q.QueryType == o.QueryType && q.Endpoint == o.Endpoint &&
		q.InferenceComponent == o.InferenceComponent && sameDS && sameHide
}

// diagnosisBuilder makes DiagnosisQuery usable in WithTarget.
type diagnosisBuilder struct{ q DiagnosisQuery }

var _ cog.Builder[variants.Dataquery] = (*diagnosisBuilder)(nil)

func (b *diagnosisBuilder) Build() (variants.Dataquery, error) {
	if err := b.q.Validate(); err != nil {
		return nil, err
	}
	return b.q, nil
}

// diagnosisTarget scopes the diagnosis to the endpoint and IC variables.
func diagnosisTarget(refID string) *diagnosisBuilder {
	ds := dsRef()
	return &diagnosisBuilder{q: DiagnosisQuery{
		RefId: refID, QueryType: models.QueryTypeDiagnosis, Datasource: &ds,
		Endpoint: "$" + dashref.VarEndpoint, InferenceComponent: "$" + dashref.VarIC,
	}}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
