package plugin

import (
	"context"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/converter"
	"github.com/inferscope/sagemaker-datasource/pkg/interval"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// runPromQL answers one query: parse the model, work out the step and the $__ variables,
// then run the range and/or instant query and convert the answers to frames. With both,
// the two calls run at once and their frames share the query's refId and response.
func (d *Datasource) runPromQL(ctx context.Context, dq backend.DataQuery) backend.DataResponse {
	if d.setupErr != nil {
		return d.errorResponse(d.setupErr)
	}
	q, err := models.ParseQuery(dq)
	if err != nil {
		return d.errorResponse(backend.DownstreamError(err))
	}
	iv, err := interval.Compute(interval.Params{
		From:            q.TimeRange.From,
		To:              q.TimeRange.To,
		MaxDataPoints:   q.MaxDataPoints,
		RequestInterval: q.RequestInterval(),
		QueryInterval:   q.Interval,
		ScrapeInterval:  d.settings.TimeInterval,
		IntervalFactor:  q.IntervalFactor,
	})
	if err != nil {
		return d.errorResponse(backend.DownstreamError(err))
	}
	expr := iv.Interpolate(q.Expr)

	var (
		wg                  sync.WaitGroup
		rangeResp, instResp backend.DataResponse
	)
	if q.Range {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer panics.Recover(queryPanicked(q.RefID, &rangeResp))
			// Aligned to the step (in the panel's time zone) so refreshes hit the same samples.
			start := interval.Align(q.TimeRange.From, iv.Step, q.UTCOffsetSec)
			end := interval.Align(q.TimeRange.To, iv.Step, q.UTCOffsetSec)
			var served rcache.Result
			rangeResp = d.convert(q, expr, iv, func(decode promclient.Decode) (err error) {
				served, err = d.queryRange(ctx, expr, start, end, iv.Step, decode)
				return err
			})
			if rangeResp.Error == nil {
				annotateCache(rangeResp.Frames, served)
				d.annotateCost(rangeResp.Frames, expr, served, served.Outcome == rcache.Bypass)
			}
		}()
	}
	if q.Instant {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer panics.Recover(queryPanicked(q.RefID, &instResp))
			var served rcache.Outcome
			instResp = d.convert(q, expr, iv, func(decode promclient.Decode) (err error) {
				served, err = d.queryInstant(ctx, expr, q.TimeRange.To, decode)
				return err
			})
			if instResp.Error == nil {
				// An instant answer is scanned upstream unless the cache served it.
				d.annotateCost(instResp.Frames, expr, rcache.Result{Outcome: served}, served != rcache.Hit)
			}
		}()
	}
	wg.Wait()
	switch {
	case !q.Instant:
		return rangeResp
	case !q.Range:
		return instResp
	}
	// Both: one response with both frame sets; a failure of either half is reported
	// without hiding the other half's frames.
	merged := rangeResp
	merged.Frames = append(merged.Frames, instResp.Frames...)
	if merged.Error == nil && instResp.Error != nil {
		merged.Error, merged.Status, merged.ErrorSource = instResp.Error, instResp.Status, instResp.ErrorSource
	}
	return merged
}

// convert runs one upstream call with the converter reading its answer as it arrives, and
// returns a DataResponse whose frames carry the query's refId (server-side expressions and
// alerting look frames up by it). A retried answer is converted again from scratch.
func (d *Datasource) convert(q *models.Query, expr string, iv interval.Result, call func(promclient.Decode) error) backend.DataResponse {
	var out backend.DataResponse
	err := call(converter.Decode(converter.Options{
		Expr:         expr,
		LegendFormat: q.LegendFormat,
		Step:         iv.Step,
	}, &out.Frames))
	if err != nil {
		out = d.errorResponse(err)
	}
	if out.Error != nil {
		// An empty frame keeps the executed query visible in the query inspector next to the error.
		out.Frames = data.Frames{data.NewFrame("").SetMeta(&data.FrameMeta{
			ExecutedQueryString: "Expr: " + expr + "\nStep: " + interval.FormatDuration(iv.Step),
		})}
	}
	for _, f := range out.Frames {
		f.RefID = q.RefID
	}
	return out
}
