package plugin

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/converter"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// runPromQL answers one query: parse the model, work out the step and the $__ variables,
// then run it in every region it names (see runPromQLIn); a query naming no region runs in
// the default region, its series without a region label. route has checked the settings.
func (d *Datasource) runPromQL(ctx context.Context, dq backend.DataQuery) backend.DataResponse {
	q, err := models.ParseQuery(dq)
	if err != nil {
		return problemResponse(refused(backend.DownstreamError(err)))
	}
	iv, err := models.ComputeInterval(models.IntervalParams{
		From:            q.TimeRange.From,
		To:              q.TimeRange.To,
		MaxDataPoints:   q.MaxDataPoints,
		RequestInterval: q.RequestInterval(),
		QueryInterval:   q.Interval,
		ScrapeInterval:  d.settings.TimeInterval,
		IntervalFactor:  q.IntervalFactor,
	})
	if err != nil {
		return problemResponse(refused(backend.DownstreamError(err)))
	}
	expr := iv.Interpolate(q.Expr)
	if q.Region == "" {
		return d.runPromQLIn(ctx, d.home, q, expr, iv, nil)
	}
	regions, err := d.regionsOf(q.RefID, q.Region)
	if err != nil {
		return problemResponse(refused(err))
	}
	// Named regions: one call (pair) per region at once, each answer's series labelled
	// with the region it came from where they lack the label.
	resps := make([]backend.DataResponse, len(regions))
	var wg sync.WaitGroup
	for i, region := range regions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer panics.Recover(queryPanicked(q.RefID, &resps[i]))
			rg, err := d.regional(ctx, region)
			if err != nil {
				resps[i] = problemResponse(refused(err))
				return
			}
			resps[i] = d.runPromQLIn(ctx, rg, q, expr, iv, data.Labels{semconv.LabelRegion: region})
		}()
	}
	wg.Wait()
	return mergeRegions(regions, resps)
}

// mergeRegions is one response from the regions' responses: frames in region order; a
// region that failed is named in the error ("region us-west-2: …", several joined by "; ")
// and the other regions' frames are kept. The status is the first failure's.
func mergeRegions(regions []string, resps []backend.DataResponse) backend.DataResponse {
	var (
		out    backend.DataResponse
		failed []string
		first  *backend.DataResponse
	)
	for i := range resps {
		r := &resps[i]
		if r.Error == nil {
			out.Frames = append(out.Frames, r.Frames...)
			continue
		}
		failed = append(failed, "region "+regions[i]+": "+r.Error.Error())
		if first == nil {
			first = r
		}
	}
	if first != nil {
		out.Error, out.Status, out.ErrorSource = errors.New(strings.Join(failed, "; ")), first.Status, first.ErrorSource
		if len(out.Frames) == 0 {
			out.Frames = first.Frames // the executed query, for the inspector
		}
	}
	return out
}

// runPromQLIn runs the range and/or instant query in one region and converts the answers
// to frames, adding labels to series that lack them. With both, the two calls run at once
// and their frames share the query's refId and response.
func (d *Datasource) runPromQLIn(ctx context.Context, rg *regional, q *models.Query, expr string, iv models.Interval, labels data.Labels) backend.DataResponse {
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
			start := models.AlignToStep(q.TimeRange.From, iv.Step, q.UTCOffsetSec)
			end := models.AlignToStep(q.TimeRange.To, iv.Step, q.UTCOffsetSec)
			a, served, err := rg.queryRange(ctx, expr, start, end, iv.Step)
			rangeResp = rg.frames(q, expr, iv, labels, a, err)
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
			a, served, err := rg.queryInstant(ctx, expr, q.TimeRange.To)
			instResp = rg.frames(q, expr, iv, labels, a, err)
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

// frames is the DataResponse of an answer (or of the error that came instead), its frames
// carrying the query's refId (server-side expressions and alerting look frames up by it).
func (rg *regional) frames(q *models.Query, expr string, iv models.Interval, labels data.Labels, a *converter.Answer, err error) backend.DataResponse {
	var out backend.DataResponse
	if err == nil {
		out.Frames, err = a.Frames(converter.Options{Expr: expr, LegendFormat: q.LegendFormat, Step: iv.Step, AddLabels: labels})
	}
	if err != nil {
		out = rg.errorResponse(err)
	}
	if out.Error != nil {
		// An empty frame keeps the executed query visible in the query inspector next to the error.
		out.Frames = data.Frames{data.NewFrame("").SetMeta(&data.FrameMeta{
			ExecutedQueryString: "Expr: " + expr + "\nStep: " + models.FormatDuration(iv.Step),
		})}
	}
	for _, f := range out.Frames {
		f.RefID = q.RefID
	}
	return out
}
