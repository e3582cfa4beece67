package diagnosis

import (
	"context"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// promClientQuerier sends the rules' queries through pkg/promclient, which signs them, paces
// them within CloudWatch's limits, retries throttling and cut-off answers, and reads
// the answer.
type promClientQuerier struct{ c PromClient }

// PromClient is the part of *promclient.Client the querier uses; the datasource passes its
// client through an interface of its own, so tests can substitute a fake.
type PromClient interface {
	Query(ctx context.Context, expr string, t time.Time, limit int, decode promclient.Decode) error
	QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, limit int, decode promclient.Decode) error
}

// NewPromClientQuerier adapts the datasource's client (the same limits and credentials as its
// panels) for Run and HandleQuery.
func NewPromClientQuerier(c PromClient) Querier { return promClientQuerier{c} }

// Instant runs an instant query; no limit is sent, so CloudWatch's maximum applies.
func (p promClientQuerier) Instant(ctx context.Context, expr string, t time.Time) (model.Vector, error) {
	var a promclient.Answer
	if err := p.c.Query(ctx, expr, t, 0, promclient.DecodeAnswer(&a)); err != nil {
		return nil, err
	}
	return Vector(&a)
}

// Range runs a range query.
func (p promClientQuerier) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	var a promclient.Answer
	if err := p.c.QueryRange(ctx, expr, start, end, step, 0, promclient.DecodeAnswer(&a)); err != nil {
		return nil, err
	}
	return Matrix(&a)
}
