package plugin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// overLimit picks the failures the results cache keeps for a while: CloudWatch's 422
// refusals other than throttling, i.e. a query over one of its per-query limits (20 s of
// execution, series or samples scanned, range). Asked again with the same data, the same
// query meets the same limit; throttling and 5xx are transient and always retried.
func overLimit(err error) bool {
	var e *promclient.APIError
	return errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity && !e.Throttled
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
	if rg.cache == nil || path == "api/v1/query" || req.GetHTTPHeader("X-Cache-Skip") != "" {
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
	b, _, err := rg.cache.Lookup(ctx, rg.cacheID, request+"?"+key.Encode(), ttl, forward)
	*into = b
	return err
}
