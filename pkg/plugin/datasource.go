// Package plugin is the Grafana datasource instance: it routes queries by type, serves the
// editor's resource calls and answers Save & test, over a CloudWatch PromQL client.
package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// Datasource is one configured datasource. Settings problems do not fail its creation:
// they are kept in setupErr and reported by Save & test and by every query and resource
// call, where the user sees them.
type Datasource struct {
	settings *models.Settings
	setupErr error

	// home is the default region's clients, built with the instance; other regions are
	// built on first use (regions.go). Nil while setupErr is set.
	home      *regional
	allowed   []string // the regions queries may name (models.Settings.Allowed)
	build     regionFactory
	regionsMu sync.Mutex
	regions   map[string]*regionSlot
	probe     regionProbe       // the regions resource's cached answer
	store     *sharedStore      // nil without jsonData.sharedStore
	redact    *awsauth.Redactor // the one redaction step; learns what the signer uses
	unpinLog  func()            // releases this instance's secureJsonData from logSecrets
	dispose   func()
	// healthTimeout bounds Save & test; tests shorten it.
	healthTimeout time.Duration
}

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// NewDatasource is the instance factory datasource.Manage calls whenever a datasource's
// settings change.
func NewDatasource(ctx context.Context, settings backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	return New(ctx, settings, NewClient)
}

// New builds a datasource with the given client factory; the alarms and inventory client
// comes from NewAWSAPI unless WithAWS says otherwise.
func New(ctx context.Context, settings backend.DataSourceInstanceSettings, factory ClientFactory, opts ...Option) (*Datasource, error) {
	o := options{aws: NewAWSAPI, prices: NewPrices, changes: NewChanges}
	for _, opt := range opts {
		opt(&o)
	}
	var secure []string
	for _, v := range settings.DecryptedSecureJSONData {
		secure = append(secure, v)
	}
	// secureJsonData is pinned: no number of rotated credentials, here or in another
	// instance sharing the log redactor, evicts it. Dispose drops the log's pins.
	d := &Datasource{redact: awsauth.NewRedactor(secure...), healthTimeout: defaultHealthTimeout,
		build: regionFactory{client: factory, aws: o.aws, prices: o.prices, changes: o.changes}, regions: map[string]*regionSlot{}}
	d.dispose = d.closeRegions
	d.unpinLog = logSecrets.Pin(secure...)

	s, err := models.LoadSettings(settings)
	if err != nil {
		d.setupErr = backend.DownstreamError(err)
		return d, nil
	}
	d.settings = s
	d.build.settings, d.build.uid = s, settings.UID
	switch {
	case s.SharedStoreErr != nil:
		d.store = &sharedStore{off: s.SharedStoreErr}
		logWarn("the shared store is off: its settings are wrong", "error", s.SharedStoreErr)
	case s.SharedStore.Enabled():
		d.store = openStore(ctx, settings.UID, s)
		d.dispose = func() { d.closeRegions(); d.store.close() }
	}
	if s.CacheSizeMiB > 0 {
		d.build.cache = rcache.New(rcache.Options{MaxBytes: int64(s.CacheSizeMiB) << 20, RefetchWindow: s.CacheRefetchWindow, Fresh: s.CacheFreshFor,
			KeepFailure: overLimit, Peer: d.store.cachePeer()})
	}
	// Endpoints first: a bad endpoint is reported even when the credentials are bad too.
	if err := checkEndpoints(s); err != nil {
		d.setupErr = err
		return d, nil
	}
	creds, err := awsauth.NewCredentialsProvider(ctx, s.Auth, awsauth.Deps{})
	if err != nil {
		d.setupErr = err
		return d, nil
	}
	proxied, err := proxyTransport(ctx, settings)
	if err != nil {
		d.setupErr = err
		return d, nil
	}
	d.build.shared = Shared{
		Creds:     creds,
		Seen:      sinks{d.redact, logSecrets},
		Transport: proxied,
		Store:     d.store,
	}
	d.allowed = s.Allowed()
	if d.home, err = d.build.build(ctx, ""); err != nil {
		d.setupErr = err
		return d, nil
	}
	if d.store != nil {
		// Without it the budget is the role ARN's account, or per credential.
		if err := d.store.askAccount(d.build.shared, d.home.endpoint); err != nil {
			logError("the shared store's account lookup could not be set up", "error", err)
		}
	}
	return d, nil
}

// QueryData runs the queries of a request in parallel, bounded by Grafana's
// concurrent_query_count, each by its queryType; what it returns is redacted. Alerting
// requests take the same path: nothing here depends on the frontend; they skip the
// results cache.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	defer d.store.enter()()
	resp := runQueries(withCachePolicy(ctx, req), req, concurrencyLimit(ctx), d.route)
	d.redactQueryResponse(resp)
	return resp, nil
}

// queryHandler answers one query of a request from its model, decoded once by route.
type queryHandler func(d *Datasource, ctx context.Context, m *models.Model) backend.DataResponse

// queryHandlers has a handler for each of models.QueryTypes.
var queryHandlers = map[string]queryHandler{
	models.QueryTypePromQL:       (*Datasource).runPromQL,
	models.QueryTypeDiagnosis:    (*Datasource).runDiagnosis,
	models.QueryTypeAlarms:       healthQuery(models.QueryTypeAlarms),
	models.QueryTypeAlarmHistory: healthQuery(models.QueryTypeAlarmHistory),
	models.QueryTypeInventory:    healthQuery(models.QueryTypeInventory),
	models.QueryTypeCost:         (*Datasource).runCost,
	models.QueryTypeChanges:      (*Datasource).runChanges,
}

// healthQuery is the handler of an alarms, alarmHistory or inventory query.
func healthQuery(qt string) queryHandler {
	return func(d *Datasource, ctx context.Context, m *models.Model) backend.DataResponse {
		return d.runHealthQuery(ctx, m, qt)
	}
}

// route runs one query by its type's handler. An unknown type is refused, naming the known
// ones (Model.Type), before the settings' problem, which refuses every other query. The
// query's JSON is decoded here, once, and the handler parses that.
func (d *Datasource) route(ctx context.Context, dq backend.DataQuery) backend.DataResponse {
	m := models.Decode(dq)
	qt, err := m.Type()
	switch {
	case err != nil:
		return problemResponse(refused(backend.DownstreamError(err)))
	case d.setupErr != nil:
		return problemResponse(refused(d.setupErr))
	case d.store == nil:
		return queryHandlers[qt](d, ctx, m)
	}
	ctx, use := withStoreUse(ctx)
	resp := queryHandlers[qt](d, ctx, m)
	d.store.annotate(&resp, use, fromAlert(ctx))
	return resp
}

// Dispose releases the instance's idle connections, its store's and its secrets' pins in
// the log redactor when Grafana replaces it.
func (d *Datasource) Dispose() {
	d.dispose()
	d.unpinLog()
}

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
	errs := fanout.Each(ctx, max(limit, 1), req.Queries, func(ctx context.Context, i int, q backend.DataQuery) error {
		results[i] = run(ctx, q)
		return nil
	})
	resp := backend.NewQueryDataResponse()
	for i, q := range req.Queries {
		if errs[i] != nil {
			results[i] = queryFailed(q.RefID, errs[i])
		}
		resp.Responses[q.RefID] = results[i]
	}
	return resp
}

// queryFailed is the response of a query (or part of one) that did not run to its end: a
// panic becomes an internal error the user can report (its stack goes to the log, not to
// the panel) instead of a crashed plugin process; a request given up before the query
// started is the caller's cancellation.
func queryFailed(refID string, err error) backend.DataResponse {
	if p, ok := err.(*panics.Error); ok {
		logError("query panicked", "refId", refID, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		return internalError(refID)
	}
	return backend.ErrDataResponseWithSource(backend.StatusTimeout, backend.ErrorSourceDownstream, err.Error())
}

// internalError is the response of a query that met a bug of the plugin (a recovered panic).
func internalError(refID string) backend.DataResponse {
	return backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin,
		fmt.Sprintf("internal error while running query %s; please report it", refID))
}
