package plugin

import (
	"context"
	"errors"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

// queryDiagnosis answers `diagnosis` queries: the rules of pkg/diagnosis run their PromQL
// through this datasource's client, so they share its credentials, limits and retries.
func (d *Datasource) queryDiagnosis(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	return runQueries(ctx, req, concurrencyLimit(ctx), func(ctx context.Context, q backend.DataQuery) backend.DataResponse {
		if d.setupErr != nil {
			return d.errorResponse(d.setupErr)
		}
		resp := diagnosis.HandleQuery(ctx, upstreamQuerier{d.client}, q)
		if resp.Error != nil {
			resp.Error = errors.New(d.redact.String(resp.Error.Error()))
			if resp.ErrorSource == "" {
				resp.ErrorSource = backend.ErrorSourceFromHTTPStatus(int(resp.Status))
			}
		}
		return resp
	}), nil
}

// upstreamQuerier adapts Upstream to diagnosis.Querier.
type upstreamQuerier struct{ up Upstream }

func (q upstreamQuerier) Instant(ctx context.Context, expr string, t time.Time) (model.Vector, error) {
	resp, err := q.up.Query(ctx, expr, t, 0)
	if err != nil {
		return nil, err
	}
	return diagnosis.DecodeVector(resp.Status, resp.Body)
}

func (q upstreamQuerier) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	resp, err := q.up.QueryRange(ctx, expr, start, end, step, 0)
	if err != nil {
		return nil, err
	}
	return diagnosis.DecodeMatrix(resp.Status, resp.Body)
}
