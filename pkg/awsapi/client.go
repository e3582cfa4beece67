package awsapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	aas "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudtrail"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// Limits of one client. Retries mirror promclient's policy (4 attempts, backoff ≤ 4 s).
const (
	maxAttempts    = 4
	maxBackoff     = 4 * time.Second
	callTimeout    = 20 * time.Second // one SDK call, its retries included
	maxAnswerBytes = 16 << 20         // one answer body; the SDK buffers it whole
	maxPages       = 200              // a paginated listing; a hostile token loop ends here
	describeLimit  = 4                // concurrent Describe* calls of one Inventory or History
)

// options are the seams tests turn; the zero value is production.
type options struct {
	base           http.RoundTripper    // innermost transport; a clone of http.DefaultTransport when nil
	backoff        retry.BackoffDelayer // the SDK's jittered exponential backoff when nil
	callTimeout    time.Duration
	maxAnswerBytes int64
	describeLimit  int        // concurrent Describe calls; describeLimit when 0
	lookupRate     rate.Limit // LookupEvents calls a second; LookupEventsTPS when 0
	lookupPacer    Pacer      // paces LookupEvents instead of a limiter at lookupRate, when set
}

// client is the production API over the SDK's CloudWatch, SageMaker and Application Auto
// Scaling clients.
type client struct {
	cw        *cloudwatch.Client
	sm        *sagemaker.Client
	aas       *aas.Client
	pr        *pricing.Client    // nil unless built by NewPrices
	ct        *cloudtrail.Client // nil unless built by NewChanges
	region    string
	timeout   time.Duration
	parallel  int             // Describe calls at once
	transport *http.Transport // nil when a test supplied the transport
}

// New builds the production API for a data source: credentials from
// awsauth.NewCredentialsProvider (every auth type, assume role, Grafana's [aws] gating),
// CloudWatch at ep (the region's monitoring host or the custom endpoint), SageMaker at
// awsauth.SageMakerEndpoint(ep), Application Auto Scaling at awsauth.AutoScalingEndpoint(ep).
// Nothing but those hosts is ever signed for. seen
// learns every credential the SDK signs with, for redaction. Build it once per data
// source instance; the result also has CloseIdleConnections for Dispose.
func New(ctx context.Context, s awsauth.Settings, ep awsauth.Endpoint, seen awsauth.SecretSink) (API, error) {
	return newClient(ctx, s, ep, seen, options{})
}

// NewWithCredentials is New on a credentials provider the caller built (and shares, e.g.
// between the regions of one data source).
func NewWithCredentials(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, opts ...Option) API {
	return newClientWith(creds, ep, seen, optionsOf(opts))
}

// Option changes how NewWithCredentials, NewPrices and NewChanges build a client.
type Option func(*options)

// WithTransport sends through t (the data source's proxy settings) instead of a clone of
// http.DefaultTransport; the client owns t and closes its idle connections.
func WithTransport(t *http.Transport) Option {
	return func(o *options) {
		if t != nil {
			o.base = t
		}
	}
}

// WithLookupRate paces LookupEvents at r calls a second instead of CloudTrail's 2: for a
// CloudTrail that allows more, such as the emulator with its limit off in the rig's sweeps.
func WithLookupRate(r rate.Limit) Option {
	return func(o *options) { o.lookupRate = r }
}

// Pacer paces calls: Wait returns when the next call may go, or why it may not (the
// context's end, or a pace that leaves no call before its deadline).
type Pacer interface {
	Wait(ctx context.Context) error
}

// WithLookupPacer paces each LookupEvents attempt through p instead of the client's own
// limiter: the plugin's pace shared by the account's replicas through the store. A nil p
// changes nothing.
func WithLookupPacer(p Pacer) Option {
	return func(o *options) {
		if p != nil {
			o.lookupPacer = p
		}
	}
}

func optionsOf(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func newClient(ctx context.Context, s awsauth.Settings, ep awsauth.Endpoint, seen awsauth.SecretSink, o options) (*client, error) {
	creds, err := awsauth.NewCredentialsProvider(ctx, s, awsauth.Deps{})
	if err != nil {
		return nil, err
	}
	return newClientWith(creds, ep, seen, o), nil
}

func newClientWith(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, o options) *client {
	c, config := newBase(creds, ep, seen, o)
	c.cw = cloudwatch.NewFromConfig(config(ep))
	c.sm = sagemaker.NewFromConfig(config(awsauth.SageMakerEndpoint(ep)))
	c.aas = aas.NewFromConfig(config(awsauth.AutoScalingEndpoint(ep)))
	return c
}

// newBase is a client without service clients and the SDK config of a service at an
// endpoint: each gets its own endpoint, restriction and guard; the rest is shared.
func newBase(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, o options) (*client, func(awsauth.Endpoint) aws.Config) {
	c := &client{region: ep.Region, timeout: o.callTimeout, parallel: o.describeLimit}
	if c.timeout <= 0 {
		c.timeout = callTimeout
	}
	if c.parallel <= 0 {
		c.parallel = describeLimit
	}
	if o.maxAnswerBytes <= 0 {
		o.maxAnswerBytes = maxAnswerBytes
	}
	if o.base == nil {
		o.base = http.DefaultTransport.(*http.Transport).Clone()
	}
	c.transport, _ = o.base.(*http.Transport)
	provider := &sinkingCredentials{next: creds, sink: seen}
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts, so.MaxBackoff = maxAttempts, maxBackoff
			if o.backoff != nil {
				so.Backoff = o.backoff
			}
		})
	}
	// The config carries no ConfigSources, so nothing from the environment or shared files
	// changes where the clients send.
	return c, func(ep awsauth.Endpoint) aws.Config {
		return aws.Config{
			Region:       ep.Region,
			Credentials:  provider,
			BaseEndpoint: aws.String(ep.URL.String()),
			HTTPClient:   httpClient(o.base, ep, o.maxAnswerBytes),
			Retryer:      retryer,
			AppID:        models.PluginID,
			APIOptions:   []func(*middleware.Stack) error{guard(ep)},
		}
	}
}

// CloseIdleConnections lets the data source's Dispose release its connections.
func (c *client) CloseIdleConnections() {
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// call bounds one SDK call, its retries included, and classifies its error.
func call[T any](ctx context.Context, c *client, action string, do func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, err := do(ctx)
	return v, classify(action, err)
}

// paginator is the shape of the SDK's paginators; O is the service's Options.
type paginator[P, O any] interface {
	HasMorePages() bool
	NextPage(ctx context.Context, optFns ...func(*O)) (P, error)
}

// drain is eachPage collecting every page's items; beyond maxPages it returns the items
// read with the errPageBound error.
func drain[P, O, T any](ctx context.Context, c *client, action string, pages paginator[P, O], items func(P) []T) ([]T, error) {
	var out []T
	err := eachPage(ctx, c, action, pages, func(p P) error {
		out = append(out, items(p)...)
		return nil
	})
	if err != nil && !errors.Is(err, errPageBound) {
		return nil, err
	}
	return out, err
}

// eachPage reads every page, each one a call (timeout, errors), at most maxPages of them,
// and hands each to read as it arrives, so no page outlives its reading; an error of read
// ends the listing with it.
func eachPage[P, O any](ctx context.Context, c *client, action string, pages paginator[P, O], read func(P) error) error {
	for n := 0; pages.HasMorePages(); n++ {
		if n == maxPages {
			return tooManyPages(action)
		}
		page, err := call(ctx, c, action, func(ctx context.Context) (P, error) { return pages.NextPage(ctx) })
		if err != nil {
			return err
		}
		if err := read(page); err != nil {
			return err
		}
	}
	return nil
}

// httpClient refuses any host but ep's (also a redirect's: none is followed) and caps
// answer bodies, over a transport of the instance's own.
func httpClient(base http.RoundTripper, ep awsauth.Endpoint, limit int64) *http.Client {
	return &http.Client{
		Transport:     awsauth.RestrictToEndpoint(bodyLimit{next: base, limit: limit}, ep),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// guard refuses a request for another host before the SDK signs it, so no signature for
// another host is ever computed, whatever the SDK's endpoint resolution did.
func guard(ep awsauth.Endpoint) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("InferscopeEndpointGuard",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				req, ok := in.Request.(*smithyhttp.Request)
				if !ok {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, errors.New("awsapi: unexpected request type")
				}
				if err := ep.Permits(req.Request); err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				return next.HandleFinalize(ctx, in)
			}), "Signing", middleware.Before)
	}
}

// sinkingCredentials tells the redactor every credential the SDK signs with (the SDK
// retrieves them for each request) and words failures as the PromQL signer does.
type sinkingCredentials struct {
	next aws.CredentialsProvider
	sink awsauth.SecretSink
}

func (p *sinkingCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := p.next.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, &awsauth.CredentialsError{Err: err}
	}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return aws.Credentials{}, &awsauth.CredentialsError{}
	}
	if p.sink != nil {
		p.sink.Add(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	}
	return creds, nil
}

// bodyLimit fails answers beyond limit bytes: the SDK reads a body whole into memory
// before decoding it.
type bodyLimit struct {
	next  http.RoundTripper
	limit int64
}

func (t bodyLimit) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.limit {
		resp.Body.Close()
		resp.Body = io.NopCloser(errReader{&tooLargeError{t.limit}})
		resp.ContentLength = -1
		return resp, nil
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.limit, limit: t.limit}
	return resp, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

type limitedBody struct {
	io.ReadCloser
	left, limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, &tooLargeError{b.limit}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
