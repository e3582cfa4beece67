package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// runDiagnosis answers a `diagnosis` query: the rules of pkg/diagnosis run their PromQL
// through this datasource's client, so they share its credentials, limits, retries and
// results cache, and their errors reach the same edge as a panel's.
func (d *Datasource) runDiagnosis(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	if d.setupErr != nil {
		return d.errorResponse(d.setupErr)
	}
	if err := models.CheckTimeRange(q.RefID, q.TimeRange); err != nil {
		return d.errorResponse(backend.DownstreamError(err))
	}
	resp := diagnosis.HandleQuery(ctx, diagnosis.NewPromClientQuerier(cachedQueries{d}), q)
	if resp.Error != nil {
		return d.errorResponse(resp.Error)
	}
	return resp
}
