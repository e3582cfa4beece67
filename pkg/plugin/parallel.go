package plugin

import (
	"context"
	"fmt"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// defaultConcurrentQueries is Grafana's own default for concurrent_query_count.
const defaultConcurrentQueries = 10

// concurrencyLimit is how many queries of one request run at once: Grafana's
// concurrent_query_count when it reaches the plugin, else the default.
func concurrencyLimit(ctx context.Context) int {
	if n, err := backend.GrafanaConfigFromContext(ctx).ConcurrentQueryCount(); err == nil && n > 0 {
		return n
	}
	return defaultConcurrentQueries
}

// runQueries answers every query of req with run, at most limit at a time. A panic in one
// query becomes that query's error and leaves the others alone.
func runQueries(ctx context.Context, req *backend.QueryDataRequest, limit int, run func(context.Context, backend.DataQuery) backend.DataResponse) *backend.QueryDataResponse {
	results := make([]backend.DataResponse, len(req.Queries))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i, q := range req.Queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			defer panics.Recover(queryPanicked(q.RefID, &results[i]))
			results[i] = run(ctx, q)
		}()
	}
	wg.Wait()
	resp := backend.NewQueryDataResponse()
	for i, q := range req.Queries {
		resp.Responses[q.RefID] = results[i]
	}
	return resp
}

// queryPanicked is the panic handler of every goroutine that runs (part of) a query
// (`defer panics.Recover(queryPanicked(refID, &resp))`): the panic becomes that query's error
// instead of a crashed plugin process.
func queryPanicked(refID string, into *backend.DataResponse) func(*panics.Error) {
	return func(p *panics.Error) {
		logError("query panicked", "refId", refID, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		*into = backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin,
			fmt.Sprintf("internal error while running query %s; please report it", refID))
	}
}
