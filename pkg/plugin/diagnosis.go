package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

// queryDiagnosis answers `diagnosis` queries: the rules of pkg/diagnosis run their PromQL
// through this datasource's client, so they share its credentials, limits and retries.
func (d *Datasource) queryDiagnosis(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	return runQueries(ctx, req, concurrencyLimit(ctx), func(ctx context.Context, q backend.DataQuery) backend.DataResponse {
		if d.setupErr != nil {
			return d.errorResponse(d.setupErr)
		}
		resp := diagnosis.HandleQuery(ctx, diagnosis.NewPromClientQuerier(d.client), q)
		if resp.Error != nil {
			return d.errorResponse(resp.Error)
		}
		return resp
	}), nil
}
