package cost

import (
	"context"
	"errors"
	"fmt"

	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
)

// Series is one series of a query's answer: its labels, and its samples' times (Unix ms)
// and values (an instant answer: one sample).
type Series struct {
	Labels func(string) string
	T      []int64
	V      []float64
}

// Answer is a query's series; Cut: the upstream said it truncated them (a warning).
type Answer struct {
	Series []Series
	Cut    bool
}

// Query runs one expression: a range query over the input's range on its step grid, or an
// instant query at its end.
type Query func(ctx context.Context, expr string) (Answer, error)

// TruncatedError is an answer cut at the upstream's series limit. Read from it, holders'
// shares would have the wrong denominators and copies' tokens would pass for unknown.
type TruncatedError struct {
	Query string
	Limit int
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("a cost query returned %d series, the most CloudWatch returns for one query, so some GPUs or token counts are missing "+
		"and the shares and costs per token would be wrong: narrow it to fewer endpoints (the endpoint filter or scope) or a shorter time range (%s)", e.Limit, e.Query)
}

// Read fills in's GPUs, Instances, Tokens and Tags from ex's queries (run at once): the GPU
// and tag queries by rangeQ, the token queries by instantQ. An answer of limit series or more, or
// one the upstream says it cut, is a *TruncatedError.
func Read(ctx context.Context, in Input, ex Exprs, limit int, rangeQ, instantQ Query) (Input, error) {
	type query struct {
		expr string
		run  Query
	}
	queries := []query{{ex.GPUs, rangeQ}, {ex.Instances, rangeQ}, {ex.Output, instantQ}, {ex.Input, instantQ}}
	if ex.TagKey != "" {
		queries = append(queries, query{ex.EndpointTags, rangeQ}, query{ex.ICTags, rangeQ})
	}
	answers := make([]Answer, len(queries))
	errs := fanout.Each(ctx, 0, queries, func(ctx context.Context, i int, q query) error {
		a, err := q.run(ctx, q.expr)
		if err == nil && (a.Cut || len(a.Series) >= limit) {
			err = &TruncatedError{Query: q.expr, Limit: limit}
		}
		answers[i] = a
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return in, err
	}
	gpus := func(s Series) GPUs { return GPUsOf(s.Labels, s.T, s.V) }
	for _, s := range answers[0].Series {
		in.GPUs = append(in.GPUs, gpus(s))
	}
	for _, s := range answers[1].Series {
		if s.Labels(noGPULabel) != "" {
			in.NoGPULabel = append(in.NoGPULabel, gpus(s))
		} else {
			in.Instances = append(in.Instances, gpus(s))
		}
	}
	for i, input := range []bool{false, true} {
		for _, s := range answers[2+i].Series {
			if len(s.V) > 0 {
				in.Tokens = append(in.Tokens, TokensOf(s.Labels, s.V[len(s.V)-1], input))
			}
		}
	}
	if ex.TagKey != "" {
		in.Tags = readTags(ex.TagKey, answers[4].Series, answers[5].Series)
	}
	in.Narrowed = ex.Narrowed
	return in, nil
}
