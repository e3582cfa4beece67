// Package promclient talks to CloudWatch's Prometheus-compatible /api/v1 API:
// it builds the requests, shapes the traffic to stay under the account's
// limits, retries throttling and transient failures, types the errors, and owns
// the one reader of the answers' envelope. A 2xx body is handed, live, to the
// caller's Decode; turning it into frames is the converter's job.
package promclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// CloudWatch's documented maxima for the limit parameter.
const (
	MaxQueryLimit     = 500
	MaxDiscoveryLimit = 10000
)

// Defaults of the client. The first three are also the settings' defaults (pkg/models
// re-exports them for the config editor); DefaultDiscoveryRPS stays below CloudWatch's 10
// discovery requests per second per account.
const (
	DefaultHTTPMethod = http.MethodPost
	// DefaultMaxConcurrency and DefaultRequestsPerSecond keep one data source well below
	// CloudWatch's per-account limits (30 concurrent, 300 per second), leaving room for
	// other clients. The limiter never sends more than requestsPerSecond in any one-second
	// window, so its token buckets give about 14 at once and 18 a second after that at 30
	// (docs/benchmarks.md, "Renovation").
	DefaultMaxConcurrency    = 10
	DefaultRequestsPerSecond = 30

	DefaultDiscoveryRPS     = 5
	DefaultMaxAttempts      = 4
	DefaultBaseDelay        = 250 * time.Millisecond
	DefaultMaxDelay         = 4 * time.Second
	DefaultMaxResponseBytes = 256 << 20
	DefaultUserAgent        = "inferscope" // callers name themselves: the plugin sends its id
)

// Options configure a Client. Only BaseURL is required.
type Options struct {
	BaseURL *url.URL
	// Transport sends the requests; put the SigV4 round-tripper here (innermost,
	// so it signs the final request). nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Method for query, query_range, labels and series: POST (form body) or GET; default
	// DefaultHTTPMethod.
	// Label values always use GET, the only method CloudWatch accepts there.
	Method string
	// QueryTimeout, when set, bounds each call including retries and is sent as timeout.
	QueryTimeout time.Duration
	// MaxConcurrency caps in-flight requests per class (queries, discovery). Default
	// DefaultMaxConcurrency.
	MaxConcurrency int
	// QueryRPS and DiscoveryRPS cap requests per class in any one-second window; defaults
	// DefaultRequestsPerSecond and DefaultDiscoveryRPS, negative means unlimited.
	QueryRPS, DiscoveryRPS float64
	Retry                  RetryPolicy
	// Sleep waits between retries; it must return early with ctx's error. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0,1) for full-jitter backoff. Default math/rand/v2.
	Jitter func() float64
	// Now is the clock used to decide whether a retry still fits the deadline. Default time.Now.
	Now              func() time.Time
	MaxResponseBytes int64
	UserAgent        string
	// Budget, when set, is the account's limits shared across replicas (budget.go); nil:
	// this client's scheduler alone, exactly as without a shared store.
	Budget AccountBudget
	// FallbackRPS (queries), FallbackDiscoveryRPS and FallbackConcurrency (each class) bound
	// the client while Budget's store is unavailable: a conservative share of the account,
	// so that replicas pacing themselves alone still stay within it together
	// (sharedstore.FallbackOf). Used only with Budget; 0 adds no bound to the client's own
	// limits, and FallbackDiscoveryRPS 0 means FallbackRPS.
	FallbackRPS, FallbackDiscoveryRPS float64
	FallbackConcurrency               int
}

// Client is safe for concurrent use; build one per datasource instance so
// its limits cover all of that datasource's queries.
type Client struct {
	base      *url.URL
	http      *http.Client
	method    string
	timeout   time.Duration
	classes   [2]*scheduler // by class: each kind of traffic has its own account limits
	budget    AccountBudget
	fallback  [2]*scheduler // by class, with budget: used while its store fails
	retry     RetryPolicy
	sleep     func(context.Context, time.Duration) error
	jitter    func() float64
	now       func() time.Time
	maxBody   int64
	userAgent string
}

type class int

const (
	classQuery class = iota
	classDiscovery
)

// shared is the class's name in the account's budget.
func (cl class) shared() Class { return [...]Class{ClassQuery, ClassDiscovery}[cl] }

// Decode reads the body of a 2xx answer while it arrives (DecodeAnswer, Data, Raw). It
// may run more than once for one call: a body cut off or not a valid answer is retried,
// and Decode runs again on the new body, so it must start from scratch each time.
type Decode func(body io.Reader) error

// New validates opts and builds a client.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == nil || opts.BaseURL.Host == "" || (opts.BaseURL.Scheme != "http" && opts.BaseURL.Scheme != "https") {
		return nil, errors.New("promclient: BaseURL must be an absolute http(s) URL; resolve it with awsauth.ResolveEndpoint")
	}
	method := strings.ToUpper(strings.TrimSpace(opts.Method))
	switch method {
	case "":
		method = DefaultHTTPMethod
	case http.MethodPost, http.MethodGet:
	default:
		// pkg/models refuses the setting, naming it; reaching this is a programming error.
		return nil, fmt.Errorf("promclient: Method %q is neither POST nor GET", opts.Method)
	}
	if opts.MaxConcurrency < 0 || opts.QueryTimeout < 0 || opts.Retry.MaxAttempts < 0 || opts.Retry.BaseDelay < 0 || opts.Retry.MaxDelay < 0 ||
		opts.FallbackConcurrency < 0 || opts.FallbackRPS < 0 || opts.FallbackDiscoveryRPS < 0 {
		return nil, errors.New("promclient: MaxConcurrency, QueryTimeout, the retry settings and the fallback limits must not be negative")
	}
	c := &Client{
		base:      opts.BaseURL,
		method:    method,
		timeout:   opts.QueryTimeout,
		retry:     opts.Retry,
		sleep:     opts.Sleep,
		jitter:    opts.Jitter,
		now:       opts.Now,
		maxBody:   opts.MaxResponseBytes,
		userAgent: opts.UserAgent,
	}
	transport := opts.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	c.http = &http.Client{
		Transport: transport,
		// A redirect would be signed again for wherever it points; never follow one.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	fill(&c.retry.MaxAttempts, DefaultMaxAttempts)
	fill(&c.retry.BaseDelay, DefaultBaseDelay)
	fill(&c.retry.MaxDelay, DefaultMaxDelay)
	fill(&c.maxBody, DefaultMaxResponseBytes)
	fill(&c.userAgent, DefaultUserAgent)
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	if c.jitter == nil {
		c.jitter = rand.Float64
	}
	if c.now == nil {
		c.now = time.Now
	}
	conc := opts.MaxConcurrency
	fill(&conc, DefaultMaxConcurrency)
	for i, rps := range []float64{opts.QueryRPS, opts.DiscoveryRPS} {
		if rps == 0 || math.IsNaN(rps) {
			rps = []float64{DefaultRequestsPerSecond, DefaultDiscoveryRPS}[i]
		}
		c.classes[i] = newScheduler(rps, conc)
	}
	if opts.Budget != nil {
		c.budget = opts.Budget
		fallbackConc := opts.FallbackConcurrency
		fill(&fallbackConc, conc)
		for i, rps := range []float64{opts.FallbackRPS, cmp.Or(opts.FallbackDiscoveryRPS, opts.FallbackRPS)} {
			// 0: no rate of its own (newScheduler's rps ≤ 0); the client's still applies.
			c.fallback[i] = newScheduler(rps, fallbackConc)
			c.fallback[i].fallback = true
		}
	}
	return c, nil
}

func fill[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Query runs an instant query at t. A limit ≤ 0 is not sent (CloudWatch's
// default, its maximum, applies); larger limits are clamped to MaxQueryLimit.
func (c *Client) Query(ctx context.Context, expr string, t time.Time, limit int, decode Decode) error {
	if strings.TrimSpace(expr) == "" {
		return backend.DownstreamErrorf("the query expression is empty; enter a PromQL expression")
	}
	p := url.Values{"query": {expr}}
	if !t.IsZero() {
		p.Set("time", formatTime(t))
	}
	c.queryParams(p, limit)
	return c.do(ctx, classQuery, c.method, []string{"api", "v1", "query"}, p, decode)
}

// QueryRange runs a range query; step must be positive and end not before start.
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, limit int, decode Decode) error {
	switch {
	case strings.TrimSpace(expr) == "":
		return backend.DownstreamErrorf("the query expression is empty; enter a PromQL expression")
	case step <= 0:
		return backend.DownstreamErrorf("the query step %s is not positive; set a positive min interval", step)
	case end.Before(start):
		return backend.DownstreamErrorf("the time range ends (%s) before it starts (%s); pick a valid time range", end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	p := url.Values{
		"query": {expr},
		"start": {formatTime(start)},
		"end":   {formatTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	c.queryParams(p, limit)
	return c.do(ctx, classQuery, c.method, []string{"api", "v1", "query_range"}, p, decode)
}

// Labels lists label names. Zero start/end are not sent.
func (c *Client) Labels(ctx context.Context, matchers []string, start, end time.Time, limit int, decode Decode) error {
	return c.do(ctx, classDiscovery, c.method, []string{"api", "v1", "labels"}, discoveryParams(matchers, start, end, limit), decode)
}

// LabelValues lists the values of label name. It always uses GET, and the
// name is percent-encoded as one path segment ("@resource.host.id" is sent
// as "%40resource.host.id").
func (c *Client) LabelValues(ctx context.Context, name string, matchers []string, start, end time.Time, limit int, decode Decode) error {
	if name == "" {
		return backend.DownstreamErrorf("the label name is empty; choose a label to list values for")
	}
	if err := checkPathSegment(name); err != nil {
		return err
	}
	return c.do(ctx, classDiscovery, http.MethodGet, []string{"api", "v1", "label", name, "values"}, discoveryParams(matchers, start, end, limit), decode)
}

// Series lists the series matching at least one selector.
func (c *Client) Series(ctx context.Context, matchers []string, start, end time.Time, limit int, decode Decode) error {
	if len(matchers) == 0 {
		return backend.DownstreamErrorf("a series lookup needs at least one match[] selector with a metric name")
	}
	return c.do(ctx, classDiscovery, c.method, []string{"api", "v1", "series"}, discoveryParams(matchers, start, end, limit), decode)
}

func (c *Client) queryParams(p url.Values, limit int) {
	if limit > 0 {
		p.Set("limit", strconv.Itoa(min(limit, MaxQueryLimit)))
	}
	if c.timeout > 0 {
		p.Set("timeout", strconv.FormatFloat(c.timeout.Seconds(), 'f', -1, 64))
	}
}

func discoveryParams(matchers []string, start, end time.Time, limit int) url.Values {
	p := url.Values{}
	for _, m := range matchers {
		p.Add("match[]", m)
	}
	if !start.IsZero() {
		p.Set("start", formatTime(start))
	}
	if !end.IsZero() {
		p.Set("end", formatTime(end))
	}
	if limit > 0 {
		p.Set("limit", strconv.Itoa(min(limit, MaxDiscoveryLimit)))
	}
	return p
}

// formatTime renders unix seconds with millisecond precision, as Grafana sends them.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
}

// escapeSegment percent-encodes all but RFC 3986 unreserved characters;
// url.PathEscape would leave '@' alone, which CloudWatch documents as %40.
func escapeSegment(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// endpointURL appends segments to the base path, keeping both the decoded and
// the escaped form so the escaped one is sent (and signed) exactly.
func (c *Client) endpointURL(segments []string) *url.URL {
	u := *c.base
	u.RawQuery, u.Fragment = "", ""
	path, raw := strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.EscapedPath(), "/")
	for _, s := range segments {
		path += "/" + s
		raw += "/" + escapeSegment(s)
	}
	u.Path, u.RawPath = path, raw
	return &u
}

func (c *Client) newRequest(ctx context.Context, method string, u *url.URL, p url.Values) (*http.Request, error) {
	var body io.Reader
	if method == http.MethodGet {
		u.RawQuery = p.Encode()
	} else {
		body = strings.NewReader(p.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	// u.String() round-trips through parsing; pin the escaped path we chose.
	req.URL.Path, req.URL.RawPath = u.Path, u.RawPath
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	return req, nil
}
