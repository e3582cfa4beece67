package plugin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

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

// queryRange runs a range query through the results cache when there is one: a request
// the cache cannot serve at all streams into decode as it arrives (the cache keeps a copy
// alongside); otherwise only the missing parts are fetched and the answer assembled from
// the extent is decoded like an upstream body. Without a cache the body streams into
// decode as it arrives.
func (rg *regional) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, decode promclient.Decode) (rcache.Result, error) {
	c := rg.d.cacheFor(ctx)
	if c == nil {
		return rcache.Result{Outcome: rcache.Bypass, Fetches: 1}, rg.client.QueryRange(ctx, expr, start, end, step, 0, decode)
	}
	return c.QueryRange(ctx, rcache.Key{DataSource: rg.cacheID, Expr: expr, Step: step}, start, end,
		func(ctx context.Context, s, e time.Time, read func(io.Reader) error) error {
			return rg.client.QueryRange(ctx, expr, s, e, step, 0, read)
		}, rcache.Read(decode))
}

// queryInstant runs an instant query, reusing a fresh answer when there is a cache
// (panels and viewers asking at once share one call). An instant answer's step for the
// cache's one-step rule is the period CloudWatch publishes at (timeInterval).
func (rg *regional) queryInstant(ctx context.Context, expr string, t time.Time, decode promclient.Decode) (rcache.Outcome, error) {
	c := rg.d.cacheFor(ctx)
	if c == nil {
		return rcache.Bypass, rg.client.Query(ctx, expr, t, 0, decode)
	}
	body, out, err := c.Instant(ctx, rg.cacheID, expr, t, rg.d.sampleInterval(), func(ctx context.Context) ([]byte, error) {
		var b []byte
		err := rg.client.Query(ctx, expr, t, 0, promclient.Raw(&b))
		return b, err
	})
	if err != nil {
		return out, err
	}
	return out, decode(bytes.NewReader(body))
}

// cachedQueries lets the diagnosis rules share one region's results cache with the panels.
type cachedQueries struct{ rg *regional }

func (c cachedQueries) Query(ctx context.Context, expr string, t time.Time, limit int, decode promclient.Decode) error {
	if limit > 0 {
		return c.rg.client.Query(ctx, expr, t, limit, decode)
	}
	_, err := c.rg.queryInstant(ctx, expr, t, decode)
	return err
}

func (c cachedQueries) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, limit int, decode promclient.Decode) error {
	if limit > 0 {
		return c.rg.client.QueryRange(ctx, expr, start, end, step, limit, decode)
	}
	_, err := c.rg.queryRange(ctx, expr, start, end, step, decode)
	return err
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
