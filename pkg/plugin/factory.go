package plugin

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// The one factory of region handles (regionFactory) and its seams: the PromQL client
// (ClientFactory, production NewClient), the alarms, inventory and policies client
// (AWSFactory, NewAWSAPI), the Price List (PricesFactory, NewPrices) and CloudTrail
// (ChangesFactory, NewChanges). Tests replace a
// seam with a fake through New's factory argument, WithAWS or WithPrices.

// Shared is what the clients of every region of one data source share.
type Shared struct {
	// Creds is the data source's credentials provider, built once (its cache and any
	// assumed role serve every region).
	Creds aws.CredentialsProvider
	// Seen learns every credential signed with, for redaction.
	Seen awsauth.SecretSink
	// Transport makes a client's innermost transport (each client its own, so Dispose
	// closes its idle connections): HTTPS_PROXY and the rest of the environment's proxy
	// settings, and the secure socks proxy when Grafana gives the data source one. nil
	// means a clone of http.DefaultTransport.
	Transport func() (*http.Transport, error)
	// Store is the shared store's handle (jsonData.sharedStore); nil without one.
	Store *sharedStore
}

// transport is sh.Transport's, or a clone of http.DefaultTransport (which reads HTTPS_PROXY).
func (sh Shared) transport() (*http.Transport, error) {
	if sh.Transport == nil {
		return http.DefaultTransport.(*http.Transport).Clone(), nil
	}
	return sh.Transport()
}

// shareThrough shares an AWS API cache of the region's answers through the store (none
// without one).
func (sh Shared) shareThrough(ep awsauth.Endpoint) awsapi.CacheOption {
	return awsapi.ShareThrough(sh.Store.cachePeer(), ep.Region)
}

// regionFactory builds region handles: the one place a region's clients come from. Its
// seams (PromQL client, AWS API, prices) are where tests put their fakes.
type regionFactory struct {
	settings *models.Settings
	shared   Shared
	uid      string        // keys the results cache, so data sources never share answers
	cache    *rcache.Cache // nil when jsonData.cacheSizeMiB is 0
	client   ClientFactory
	aws      AWSFactory
	prices   PricesFactory
	changes  ChangesFactory
}

// build makes a region's handle: its endpoint by the settings' rules, the PromQL client,
// the AWS API client (its failure kept in awsErr; PromQL works without it) and the price
// list (likewise).
func (f *regionFactory) build(ctx context.Context, region string) (*regional, error) {
	ep, err := awsauth.ResolveRegionEndpoint(f.settings.Auth, region)
	if err != nil {
		return nil, err
	}
	client, err := f.client(ctx, f.settings, ep, f.shared)
	if err != nil {
		return nil, err
	}
	// The default region is suffixed too: rcache joins id and expression with NUL, which an
	// expression may contain, so a bare uid would let "us-west-2\x00up" reach us-west-2's "up".
	rg := &regional{region: ep.Region, endpoint: ep, client: client, cacheID: f.uid + "\x00" + ep.Region,
		cache: f.cache, sampleInterval: f.settings.TimeInterval, priceTable: f.settings.PriceTable}
	if rg.aws, err = f.aws(ctx, f.settings, ep, f.shared); err != nil {
		rg.aws, rg.awsErr = nil, err
	}
	if rg.prices, err = f.prices(f.settings, ep, f.shared); err != nil {
		rg.prices, rg.pricesErr = nil, err
	}
	if rg.changes, err = f.changes(f.settings, ep, f.shared); err != nil {
		rg.changes, rg.changesErr = nil, err
	}
	return rg, nil
}

// Upstream is what the datasource needs from CloudWatch; *promclient.Client implements it
// and tests substitute fakes. A 2xx body goes to decode as it arrives.
type Upstream interface {
	Query(ctx context.Context, expr string, t time.Time, limit int, decode promclient.Decode) error
	QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, limit int, decode promclient.Decode) error
	Labels(ctx context.Context, matchers []string, start, end time.Time, limit int, decode promclient.Decode) error
	LabelValues(ctx context.Context, name string, matchers []string, start, end time.Time, limit int, decode promclient.Decode) error
	Series(ctx context.Context, matchers []string, start, end time.Time, limit int, decode promclient.Decode) error
}

// ClientFactory builds one region's upstream client for validated settings and the
// endpoint the region resolves to, on what the data source's regions share (credentials,
// the redaction sink that learns every credential the signer uses).
type ClientFactory func(ctx context.Context, s *models.Settings, ep awsauth.Endpoint, sh Shared) (Upstream, error)

// NewClient is the production ClientFactory: the shared credentials (gated by Grafana's
// [aws] settings), a transport that refuses any host but the region's endpoint, SigV4
// signing for the region last, and the traffic-shaping client on top (its limiter the
// region's own; with a shared store, the account's budget after it).
func NewClient(_ context.Context, s *models.Settings, ep awsauth.Endpoint, sh Shared) (Upstream, error) {
	transport, err := sh.transport()
	if err != nil {
		return nil, err
	}
	opts := promclient.Options{
		BaseURL:        ep.URL,
		Transport:      awsauth.Transport(transport, sh.Creds, ep, sh.Seen),
		Method:         s.HTTPMethod,
		QueryTimeout:   s.QueryTimeout,
		MaxConcurrency: s.MaxConcurrency,
		QueryRPS:       s.RequestsPerSecond,
		UserAgent:      models.PluginID,
	}
	if b := sh.Store.budget(ep.Region); b != nil {
		opts.Budget = b
		sh.Store.fallback.Apply(&opts)
	}
	c, err := promclient.New(opts)
	if err != nil {
		return nil, err
	}
	return closingClient{Client: c, transport: transport}, nil
}

// closingClient lets Dispose close the instance's idle connections.
type closingClient struct {
	*promclient.Client
	transport *http.Transport
}

func (c closingClient) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// AWSFactory builds one region's CloudWatch alarms and SageMaker inventory client for
// validated settings, on the same shared credentials and endpoint rules as the PromQL
// client; sh.Seen learns the credentials it signs with, for redaction. Tests inject fakes
// of awsapi.API through it.
type AWSFactory func(ctx context.Context, s *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.API, error)

// Option changes how New builds a datasource.
type Option func(*options)

type options struct {
	aws     AWSFactory
	prices  PricesFactory
	changes ChangesFactory
}

// WithAWS builds the alarms and inventory client with f instead of NewAWSAPI.
func WithAWS(f AWSFactory) Option { return func(o *options) { o.aws = f } }

// awsCacheTTL is how long contributors and history are reused (alarms for their shortest
// evaluation period, 10–60 s; the inventory 4× as long, see awsapi.Cached): panels and
// viewers refreshing together share one AWS call.
const awsCacheTTL = 15 * time.Second

// NewAWSAPI is the production AWSFactory: pkg/awsapi's client on the data source's shared
// credentials and the region's endpoint, behind its brief per-region cache (shared with
// the other replicas through the store, when there is one).
func NewAWSAPI(_ context.Context, _ *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.API, error) {
	t, err := sh.transport()
	if err != nil {
		return nil, err
	}
	return awsapi.Cached(awsapi.NewWithCredentials(sh.Creds, ep, sh.Seen, awsapi.WithTransport(t)), awsCacheTTL, nil, sh.shareThrough(ep)), nil
}

// PricesFactory builds one region's Price List client on the data source's shared
// credentials; tests inject fakes through WithPrices.
type PricesFactory func(s *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.PriceLister, error)

// WithPrices builds the Price List client with f instead of NewPrices.
func WithPrices(f PricesFactory) Option { return func(o *options) { o.prices = f } }

// NewPrices is the production PricesFactory: pkg/awsapi's GetProducts client, each region's
// list kept for a day.
func NewPrices(_ *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.PriceLister, error) {
	t, err := sh.transport()
	if err != nil {
		return nil, err
	}
	p, err := awsapi.NewPrices(sh.Creds, ep, sh.Seen, awsapi.WithTransport(t))
	if err != nil {
		return nil, err
	}
	return awsapi.CachedPrices(p, nil, sh.shareThrough(ep)), nil
}

// ChangesFactory builds one region's CloudTrail client (the fleet's changes) on the data
// source's shared credentials; tests inject fakes through WithChanges.
type ChangesFactory func(s *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.ChangeLister, error)

// WithChanges builds the CloudTrail client with f instead of NewChanges.
func WithChanges(f ChangesFactory) Option { return func(o *options) { o.changes = f } }

// changesCacheTTL is how long a range's changes are reused: CloudTrail delivers an event
// within minutes, and LookupEvents' 2 calls a second are shared by every panel.
const changesCacheTTL = time.Minute

// NewChanges is the production ChangesFactory: pkg/awsapi's LookupEvents client, paced to
// CloudTrail's rate (with a store, the account's pace shared by its replicas), each
// range's answer cached for changesCacheTTL (with a store, swept once across replicas).
func NewChanges(_ *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.ChangeLister, error) {
	t, err := sh.transport()
	if err != nil {
		return nil, err
	}
	c := awsapi.NewChanges(sh.Creds, ep, sh.Seen, awsapi.WithTransport(t), awsapi.WithLookupPacer(sh.Store.lookupPacer(ep.Region)))
	return awsapi.CachedChanges(c, changesCacheTTL, time.Now, awsapi.ShareThrough(sh.Store.sweepPeer(), ep.Region)), nil
}
