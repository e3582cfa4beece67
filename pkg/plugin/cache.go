package plugin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/converter"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

type noCacheKey struct{}

// overLimit picks the failures the results cache keeps for a while: CloudWatch's 422
// refusals other than throttling, i.e. a query over one of its per-query limits (20 s of
// execution, series or samples scanned, range). Asked again with the same data, the same
// query meets the same limit; throttling and 5xx are transient and always retried.
func overLimit(err error) bool {
	var e *promclient.APIError
	return errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity && !e.Throttled
}

// withCachePolicy marks ctx to skip the results cache when the request asks for fresh
// data: alert evaluations (FromAlert), and Grafana's X-Cache-Skip convention.
func withCachePolicy(ctx context.Context, req *backend.QueryDataRequest) context.Context {
	if req.Headers["FromAlert"] == "true" || req.GetHTTPHeader("X-Cache-Skip") != "" {
		return context.WithValue(ctx, noCacheKey{}, true)
	}
	return ctx
}

func (d *Datasource) cacheFor(ctx context.Context) *rcache.Cache {
	if skip, _ := ctx.Value(noCacheKey{}).(bool); skip {
		return nil
	}
	return d.cache
}

// queryRange runs a range query, through the results cache when there is one: only the
// missing parts are fetched, and the answer is assembled from the extent (on a miss it is
// the fetched answer itself).
func (rg *regional) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) (*converter.Answer, rcache.Result, error) {
	fetch := func(ctx context.Context, s, e time.Time) (*converter.Answer, error) {
		var a converter.Answer
		return &a, rg.client.QueryRange(ctx, expr, s, e, step, 0, converter.Decode(&a))
	}
	c := rg.d.cacheFor(ctx)
	if c == nil {
		a, err := fetch(ctx, start, end)
		return a, rcache.Result{Outcome: rcache.Bypass, Fetches: 1}, err
	}
	return c.QueryRange(ctx, rcache.Key{DataSource: rg.cacheID, Expr: expr, Step: step}, start, end, fetch)
}

// queryInstant runs an instant query, reusing a fresh answer when there is a cache
// (panels and viewers asking at once share one call). An instant answer's step for the
// cache's one-step rule is the period CloudWatch publishes at (timeInterval).
func (rg *regional) queryInstant(ctx context.Context, expr string, t time.Time) (*converter.Answer, rcache.Outcome, error) {
	fetch := func(ctx context.Context) (*converter.Answer, error) {
		var a converter.Answer
		return &a, rg.client.Query(ctx, expr, t, 0, converter.Decode(&a))
	}
	c := rg.d.cacheFor(ctx)
	if c == nil {
		a, err := fetch(ctx)
		return a, rcache.Bypass, err
	}
	return c.Instant(ctx, rg.cacheID, expr, t, rg.d.sampleInterval(), fetch)
}

// cachedQueries is one region's diagnosis.Querier: the rules and the threshold fallback
// share the region's results cache with the panels.
type cachedQueries struct{ rg *regional }

func (c cachedQueries) Instant(ctx context.Context, expr string, t time.Time) (model.Vector, error) {
	a, _, err := c.rg.queryInstant(ctx, expr, t)
	if err != nil {
		return nil, err
	}
	return diagnosis.Vector(a)
}

func (c cachedQueries) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	a, _, err := c.rg.queryRange(ctx, expr, start, end, step)
	if err != nil {
		return nil, err
	}
	return diagnosis.Matrix(a)
}

// lookupGranularity rounds the time range of label and series lookups in the cache key, so
// a variable refreshed with the dashboard a minute later is answered from the cache: the
// answer covers a range up to this much earlier, and is at most its TTL old.
const lookupGranularity = 5 * time.Minute

// maxLookupTTL caps the max-age the frontend asks for (X-Grafana-Cache).
const maxLookupTTL = 10 * time.Minute

// lookup answers a label, label-values or series call from the cache for a short time;
// query_result()'s instant queries and X-Cache-Skip requests always go upstream.
func (rg *regional) lookup(ctx context.Context, req *backend.CallResourceRequest, path, name string, isLabelValues bool, p resourceParams, into *[]byte) error {
	forward := func(ctx context.Context) ([]byte, error) {
		var b []byte
		err := rg.forward(ctx, path, name, isLabelValues, p, promclient.Raw(&b))
		return b, err
	}
	if rg.d.cache == nil || path == "api/v1/query" || req.GetHTTPHeader("X-Cache-Skip") != "" {
		b, err := forward(ctx)
		*into = b
		return err
	}
	key := url.Values{"match[]": p.matchers, "limit": {strconv.Itoa(p.requestedLimit)}}
	for k, t := range map[string]time.Time{"start": p.start, "end": p.end} {
		if !t.IsZero() {
			key.Set(k, strconv.FormatInt(t.Truncate(lookupGranularity).Unix(), 10))
		}
	}
	request := path
	if isLabelValues {
		request = "label\x00" + name // one key however the path spelled the name
	}
	ttl := time.Duration(0) // the cache's default
	if m := maxAge.FindStringSubmatch(req.GetHTTPHeader("X-Grafana-Cache")); m != nil {
		if secs, err := strconv.Atoi(m[1]); err == nil && secs > 0 {
			ttl = min(time.Duration(secs)*time.Second, maxLookupTTL)
		}
	}
	b, _, err := rg.d.cache.Lookup(ctx, rg.cacheID, request+"?"+key.Encode(), ttl, forward)
	*into = b
	return err
}

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
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: "Upstream calls (results cache " + string(r.Outcome) + ")"}, Value: float64(r.Fetches)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: "Points fetched upstream"}, Value: float64(r.Points)},
	)
}
