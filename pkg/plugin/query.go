package plugin

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// runPromQL answers one query: parse the model, work out the step and the $__ variables,
// then run it in every region it names (see runPromQLIn); a query naming no region runs in
// the default region, its series without a region label. route has checked the settings.
func (d *Datasource) runPromQL(ctx context.Context, m *models.Model) backend.DataResponse {
	q, err := m.PromQL()
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
	regions, err := d.regionsOf(q.RefID, q.Region)
	if err != nil {
		return problemResponse(refused(err))
	}
	// A query naming regions labels each answer's series with the region it came from,
	// where they lack the label.
	named := q.Region != ""
	parts := forRegions(ctx, d, q.RefID, regions, func(ctx context.Context, rg *regional) (data.Frames, error) {
		var labels data.Labels
		if named {
			labels = data.Labels{semconv.LabelRegion: rg.region}
		}
		resp := d.runPromQLIn(ctx, rg, q, expr, iv, labels)
		if resp.Error != nil {
			return nil, &failedResponse{resp}
		}
		return resp.Frames, nil
	})
	var frames data.Frames
	for _, p := range parts {
		frames = append(frames, p.val...)
	}
	return mergeFailures(named, parts, frames)
}

// runPromQLIn runs the range and/or instant query in one region and converts the answers
// to frames, adding labels to series that lack them. With both, the two calls run at once
// and their frames share the query's refId and response.
func (d *Datasource) runPromQLIn(ctx context.Context, rg *regional, q *models.Query, expr string, iv models.Interval, labels data.Labels) backend.DataResponse {
	var (
		rangeResp, instResp backend.DataResponse
		calls               []func(context.Context) error
		into                []*backend.DataResponse
	)
	if q.Range {
		into = append(into, &rangeResp)
		calls = append(calls, func(ctx context.Context) error {
			// Aligned to the step (in the panel's time zone) so refreshes hit the same samples.
			start := models.AlignToStep(q.TimeRange.From, iv.Step, q.UTCOffsetSec)
			end := models.AlignToStep(q.TimeRange.To, iv.Step, q.UTCOffsetSec)
			a, served, err := rg.queryRange(ctx, expr, start, end, iv.Step)
			rangeResp = rg.frames(q.RefID, frameOptions{Expr: expr, LegendFormat: q.LegendFormat, Step: iv.Step, AddLabels: labels, Start: start, End: end}, a, err)
			if rangeResp.Error == nil {
				if served.Outcome == rcache.Bypass {
					// Passed through: the whole answer came from upstream.
					served.Points = framePoints(rangeResp.Frames)
				}
				annotateCache(rangeResp.Frames, served)
				d.annotateCost(rangeResp.Frames, expr, served)
			}
			return nil
		})
	}
	if q.Instant {
		into = append(into, &instResp)
		calls = append(calls, func(ctx context.Context) error {
			a, served, err := rg.queryInstant(ctx, expr, q.TimeRange.To)
			instResp = rg.frames(q.RefID, frameOptions{Expr: expr, LegendFormat: q.LegendFormat, Step: iv.Step, AddLabels: labels, End: q.TimeRange.To}, a, err)
			if instResp.Error == nil {
				// An instant answer is fetched (and scanned) upstream unless the cache served it
				// (from this replica or the shared store).
				r := rcache.Result{Outcome: served}
				if served != rcache.Hit && served != rcache.SharedHit {
					r.Fetches, r.Points = 1, framePoints(instResp.Frames)
				}
				annotateCache(instResp.Frames, r)
				d.annotateCost(instResp.Frames, expr, r)
			}
			return nil
		})
	}
	for i, err := range fanout.Calls(ctx, 0, calls...) {
		if err != nil {
			*into[i] = queryFailed(q.RefID, err)
		}
	}
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
func (rg *regional) frames(refID string, opts frameOptions, a *promclient.Answer, err error) backend.DataResponse {
	var out backend.DataResponse
	if err == nil {
		out.Frames, err = framesOf(a, opts)
	}
	if err != nil {
		out = rg.errorResponse(err)
	}
	if out.Error != nil {
		// An empty frame keeps the executed query visible in the query inspector next to the error.
		out.Frames = data.Frames{data.NewFrame("").SetMeta(&data.FrameMeta{ExecutedQueryString: executedQuery(opts)})}
	}
	for _, f := range out.Frames {
		f.RefID = refID
	}
	return out
}

type (
	noCacheKey   struct{}
	fromAlertKey struct{}
)

// withCachePolicy marks ctx to skip the results cache when the request asks for fresh
// data: alert evaluations (FromAlert, also marked as unseen: fromAlert), and Grafana's
// X-Cache-Skip convention.
func withCachePolicy(ctx context.Context, req *backend.QueryDataRequest) context.Context {
	if req.Headers["FromAlert"] == "true" {
		ctx = context.WithValue(ctx, fromAlertKey{}, true)
	}
	if req.Headers["FromAlert"] == "true" || req.GetHTTPHeader("X-Cache-Skip") != "" {
		return context.WithValue(ctx, noCacheKey{}, true)
	}
	return ctx
}

// fromAlert says whether the request is an alert evaluation, whose response no one reads.
func fromAlert(ctx context.Context) bool {
	alert, _ := ctx.Value(fromAlertKey{}).(bool)
	return alert
}

func (rg *regional) cacheFor(ctx context.Context) *rcache.Cache {
	if skip, _ := ctx.Value(noCacheKey{}).(bool); skip {
		return nil
	}
	return rg.cache
}

// queryRange runs a range query, through the results cache when there is one: only the
// missing parts are fetched, and the answer is assembled from the extent (on a miss it is
// the fetched answer itself).
func (rg *regional) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) (*promclient.Answer, rcache.Result, error) {
	fetch := func(ctx context.Context, s, e time.Time) (*promclient.Answer, error) {
		var a promclient.Answer
		return &a, rg.client.QueryRange(ctx, expr, s, e, step, 0, promclient.DecodeAnswer(&a))
	}
	c := rg.cacheFor(ctx)
	if c == nil {
		a, err := fetch(ctx, start, end)
		return a, rcache.Result{Outcome: rcache.Bypass, Fetches: 1}, err
	}
	return c.QueryRange(ctx, rcache.Key{DataSource: rg.cacheID, Expr: expr, Step: step}, start, end, fetch)
}

// queryInstant runs an instant query, reusing a fresh answer when there is a cache
// (panels and viewers asking at once share one call). An instant answer's step for the
// cache's one-step rule is the period CloudWatch publishes at (timeInterval).
func (rg *regional) queryInstant(ctx context.Context, expr string, t time.Time) (*promclient.Answer, rcache.Outcome, error) {
	fetch := func(ctx context.Context) (*promclient.Answer, error) {
		var a promclient.Answer
		return &a, rg.client.Query(ctx, expr, t, 0, promclient.DecodeAnswer(&a))
	}
	c := rg.cacheFor(ctx)
	if c == nil {
		a, err := fetch(ctx)
		return a, rcache.Bypass, err
	}
	return c.Instant(ctx, rg.cacheID, expr, t, rg.sampleInterval, fetch)
}

// cacheStatPrefix starts the name of the stat that says how the results cache served a
// query; the stat's value is the upstream calls it made for it.
const cacheStatPrefix = "Results cache: "

func cacheStatName(o rcache.Outcome) string { return cacheStatPrefix + string(o) + " (upstream calls)" }

// annotateCache shows in the query inspector (frame stats) how the cache served a query.
func annotateCache(frames data.Frames, r rcache.Result) {
	if len(frames) == 0 || r.Outcome == "" {
		return
	}
	f := frames[0]
	if f.Meta == nil {
		f.Meta = &data.FrameMeta{}
	}
	f.Meta.Stats = append(f.Meta.Stats,
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: cacheStatName(r.Outcome)}, Value: float64(r.Fetches)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: "Points fetched upstream"}, Value: float64(r.Points)},
	)
}

// rangeSelector finds range-vector windows such as [5m] or subqueries [1h:1m].
var rangeSelector = regexp.MustCompile(`\[\s*([0-9][0-9a-z]*)\s*(?::[^\]]*)?\]`)

// samplesPerPoint estimates how many stored samples one output point reads: the widest
// range window over the sample interval, else one (the latest sample).
func samplesPerPoint(expr string, sampleInterval time.Duration) int64 {
	widest := time.Duration(0)
	for _, m := range rangeSelector.FindAllStringSubmatch(expr, -1) {
		if d, err := models.ParseDuration(m[1]); err == nil {
			widest = max(widest, d)
		}
	}
	return max(1, int64(widest/sampleInterval))
}

// sampleInterval is how often the data source's metrics are sampled: its timeInterval
// (models.DefaultTimeInterval when unset).
func (d *Datasource) sampleInterval() time.Duration { return d.settings.TimeInterval }

// framePoints is how many points the frames hold: rows × value fields.
func framePoints(frames data.Frames) int64 {
	var points int64
	for _, f := range frames {
		if n, err := f.RowLen(); err == nil {
			points += int64(n) * int64(max(len(f.Fields)-1, 0))
		}
	}
	return points
}

// annotateCost adds the query's estimated samples scanned and their cost at the
// configured price to the first frame's stats (the query inspector shows them), from the
// points fetched upstream (r.Points). CloudWatch's answers carry no scan statistics, so
// this is an estimate: points × samples each point reads.
func (d *Datasource) annotateCost(frames data.Frames, expr string, r rcache.Result) {
	if len(frames) == 0 {
		return
	}
	points := r.Points
	samples := points * samplesPerPoint(expr, d.sampleInterval())
	price := d.settings.CostPerMillionSamples
	f := frames[0]
	if f.Meta == nil {
		f.Meta = &data.FrameMeta{}
	}
	f.Meta.Stats = append(f.Meta.Stats,
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: "Samples scanned (estimate)"}, Value: float64(samples)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: fmt.Sprintf("Estimated cost (USD at $%g per 1M samples, jsonData.costPerMillionSamples)", price), Unit: "currencyUSD"}, Value: float64(samples) / 1e6 * price},
	)
}
