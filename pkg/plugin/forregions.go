package plugin

import (
	"context"
	"errors"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// regionsAtOnce bounds how many regions one query, inventory lookup or Save & test reads at
// once (each region's calls are bounded again by its limiter and by pkg/awsapi).
const regionsAtOnce = 4

// A query type runs in three parts: parse its model, run in one region (a function of the
// region's handle), combine the regions' parts into one response. forRegions is the middle
// one for every type: the fan-out, and each region's failure worded once; mergeFailures
// is the shared half of combining: the "region X: …" wording and the status.

// regionPart is one region's share of a query: what run gave, or the response its failure
// would be on a panel of that region alone.
type regionPart[T any] struct {
	region string
	val    T
	failed *backend.DataResponse
}

// failedResponse is a region's failure already worded as its response (a PromQL query's
// carries the executed query, for the query inspector).
type failedResponse struct{ resp backend.DataResponse }

func (f *failedResponse) Error() string { return f.resp.Error.Error() }

// forRegions runs a query (refID) in each of its regions, at most regionsAtOnce at a time,
// and words each region's failure: run's error explained with the region's endpoint, a
// region whose handle could not be built refused, a panic an internal error naming the
// query (its stack logged).
func forRegions[T any](ctx context.Context, d *Datasource, refID string, regions []string, run func(ctx context.Context, rg *regional) (T, error)) []regionPart[T] {
	parts := make([]regionPart[T], len(regions))
	rgs, errs := d.inRegions(ctx, "query "+refID, regions, func(ctx context.Context, i int, rg *regional) (err error) {
		parts[i].val, err = run(ctx, rg)
		return err
	})
	for i, err := range errs {
		parts[i].region = regions[i]
		if err == nil {
			continue
		}
		var resp backend.DataResponse
		var fr *failedResponse
		if _, ok := err.(*panics.Error); ok { // logged where it was recovered
			resp = internalError(refID)
		} else if errors.As(err, &fr) {
			resp = fr.resp
		} else {
			resp = rgs[i].errorResponse(err) // a nil rg: refused
		}
		parts[i].failed = &resp
	}
	return parts
}

// mergeFailures is a query's response from its frames and its regions' failures. A query
// that names its regions names each failed one ("region us-west-2: …", several joined by
// "; "); the status is the first failure's; with no frames of its own the response keeps
// the first failure's (the executed query, for the inspector).
func mergeFailures[T any](named bool, parts []regionPart[T], frames data.Frames) backend.DataResponse {
	out := backend.DataResponse{Frames: frames}
	var (
		msgs  []string
		first *backend.DataResponse
	)
	for _, p := range parts {
		if p.failed == nil {
			continue
		}
		msg := p.failed.Error.Error()
		if named {
			msg = "region " + p.region + ": " + msg
		}
		msgs = append(msgs, msg)
		if first == nil {
			first = p.failed
		}
	}
	if first == nil {
		return out
	}
	out.Error, out.Status, out.ErrorSource = first.Error, first.Status, first.ErrorSource
	if len(msgs) > 1 || named {
		out.Error = errors.New(strings.Join(msgs, "; "))
	}
	if len(out.Frames) == 0 {
		out.Frames = first.Frames
	}
	return out
}

// inRegions runs fn on each region's handle, at most regionsAtOnce regions at a time,
// panic-safe. It returns each region's handle (nil when it could not be built) and its
// failure: the handle could not be built, or fn failed.
func (d *Datasource) inRegions(ctx context.Context, what string, regions []string, fn func(ctx context.Context, i int, rg *regional) error) ([]*regional, []error) {
	rgs := make([]*regional, len(regions))
	calls := make([]func() error, len(regions))
	for i, region := range regions {
		calls[i] = func() error {
			rg, err := d.regional(ctx, region)
			if err != nil {
				return err
			}
			rgs[i] = rg
			return fn(ctx, i, rg)
		}
	}
	return rgs, parallelN(what, regionsAtOnce, calls...)
}

// eachRegion is inRegions for the AWS API's readers: a region without an alarms and
// inventory client fails with the reason it has none.
func (d *Datasource) eachRegion(ctx context.Context, what string, regions []string, fn func(ctx context.Context, i int, rg *regional) error) ([]*regional, []error) {
	return d.inRegions(ctx, what, regions, func(ctx context.Context, i int, rg *regional) error {
		if rg.aws == nil {
			return rg.awsErr
		}
		return fn(ctx, i, rg)
	})
}
