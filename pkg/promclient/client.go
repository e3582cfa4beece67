// Package promclient talks to CloudWatch's Prometheus-compatible /api/v1 API:
// it builds the requests, shapes the traffic to stay under the account's
// limits, retries throttling and transient failures, types the errors, and owns
// the one reader of the answers' envelope. A 2xx body is handed, live, to the
// caller's Decode; turning it into frames is the converter's job.
package promclient

import (
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
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"golang.org/x/time/rate"
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

// RetryPolicy bounds retries of throttled (422 throttle, 429) and 5xx answers.
type RetryPolicy struct {
	MaxAttempts int           // total tries including the first; 1 disables retries. Default 4.
	BaseDelay   time.Duration // first backoff ceiling, doubled per retry. Default 250ms.
	MaxDelay    time.Duration // cap on one backoff, and on an honoured Retry-After. Default 4s.
}

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
}

// Client is safe for concurrent use; build one per datasource instance so
// its limits cover all of that datasource's queries.
type Client struct {
	base      *url.URL
	http      *http.Client
	method    string
	timeout   time.Duration
	classes   [2]*scheduler // by class: each kind of traffic has its own account limits
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
	if opts.MaxConcurrency < 0 || opts.QueryTimeout < 0 || opts.Retry.MaxAttempts < 0 || opts.Retry.BaseDelay < 0 || opts.Retry.MaxDelay < 0 {
		return nil, errors.New("promclient: MaxConcurrency, QueryTimeout and the retry settings must not be negative")
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
	return c, nil
}

func fill[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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

// do sends one logical call: paced, bounded, retried. A 2xx body goes to decode while it
// arrives; a body cut off or not a valid answer is retried like a 5xx, decode running
// again on the new body.
func (c *Client) do(ctx context.Context, cl class, method string, segments []string, p url.Values, decode Decode) error {
	if decode == nil {
		decode = Data(nil)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	u := c.endpointURL(segments)
	var lastErr error // the last retryable answer
	for attempt := 1; ; attempt++ {
		resp, done, err := c.attempt(ctx, c.classes[cl], method, u, p)
		if err == nil {
			if err = c.read(ctx, resp, done, decode); err == nil {
				return nil
			}
		}
		retryable := false
		var (
			apiErr  *APIError
			bodyErr *BodyError
		)
		switch {
		case errors.As(err, &apiErr):
			apiErr.Attempts = attempt
			retryable = apiErr.Retryable()
		case errors.As(err, &bodyErr):
			bodyErr.Attempts = attempt
			retryable = true
		case lastErr != nil && ctx.Err() != nil:
			// Out of time while retrying: CloudWatch's last answer says more than the deadline.
			return lastErr
		default:
			return err
		}
		if !retryable || attempt >= c.retry.MaxAttempts {
			return err
		}
		lastErr = err
		var header http.Header // Retry-After, when CloudWatch answered
		if resp != nil {
			header = resp.Header
		}
		delay, ok := c.backoff(attempt, header)
		if !ok {
			return err
		}
		if deadline, has := ctx.Deadline(); has && !c.now().Add(delay).Before(deadline) {
			return err
		}
		if c.sleep(ctx, delay) != nil {
			return err
		}
	}
}

// attempt waits for its turn (rate, concurrency, cheap first), then sends once. A 2xx
// answer comes back unread with done, which closes it and frees the slot held while it
// is read; any other answer is read into an *APIError and comes back closed, for its header.
func (c *Client) attempt(ctx context.Context, sched *scheduler, method string, u *url.URL, p url.Values) (resp *http.Response, done func(), err error) {
	release, err := sched.acquire(ctx, requestCost(p))
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	uc := *u
	req, err := c.newRequest(ctx, method, &uc, p)
	if err != nil {
		return nil, nil, fmt.Errorf("promclient: building the request: %w", err)
	}
	if resp, err = c.http.Do(req); err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, func() { resp.Body.Close(); release() }, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && len(body) == 0 {
		return resp, nil, &BodyError{Status: resp.StatusCode, Cut: true, Err: err}
	}
	return resp, nil, parseError(resp.StatusCode, resp.Header, body)
}

// read hands a 2xx body to decode and types the outcome (readError); done closes the body
// and frees its slot even when decode panics.
func (c *Client) read(ctx context.Context, resp *http.Response, done func(), decode Decode) error {
	defer done()
	body := &bodyReader{r: resp.Body, max: c.maxBody}
	return readError(ctx, resp, body, decode(body))
}

// readError types what decoding a 2xx body gave: a broken or oversized read before the
// decoder's own error (the connection, not the content, is at fault), a malformed answer
// as a retryable *BodyError, and an *APIError in the envelope with the answer's status.
func readError(ctx context.Context, resp *http.Response, body *bodyReader, err error) error {
	switch {
	case body.err != nil && ctx.Err() != nil:
		return ctx.Err()
	case errors.As(body.err, new(*TooLargeError)):
		return body.err
	case body.err != nil:
		return &BodyError{Status: resp.StatusCode, Bytes: body.n, Cut: true, Err: body.err}
	case err == nil:
		// Let the connection be reused when the reader stopped just short of the end.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		return nil
	}
	var (
		apiErr *APIError
		me     *MalformedError
	)
	switch {
	case errors.As(err, &apiErr):
		apiErr.Status, apiErr.RequestID = resp.StatusCode, resp.Header.Get("x-amzn-RequestId")
		apiErr.Cause = classifyCause(apiErr)
	case errors.As(err, &me):
		return &BodyError{Status: resp.StatusCode, Bytes: body.n, Err: err}
	}
	return err
}

// bodyReader counts a 2xx body, refuses bytes beyond max and remembers the first read
// failure, so a decoder's error can be traced to the connection rather than the content.
type bodyReader struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if rest := b.max + 1 - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		b.err = &TooLargeError{Limit: b.max, Unit: "bytes"}
		return 0, b.err
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// backoff is capped exponential backoff with full jitter, unless the server
// said how long to wait; ok is false when it asks for more than MaxDelay.
func (c *Client) backoff(attempt int, h http.Header) (time.Duration, bool) {
	if d, ok := retryAfter(h.Get("Retry-After"), c.now()); ok {
		return d, d <= c.retry.MaxDelay
	}
	ceiling := c.retry.MaxDelay
	if shift := attempt - 1; shift < 32 {
		if d := c.retry.BaseDelay << shift; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(c.jitter() * float64(ceiling)), true
}

// retryAfter parses Retry-After as delta seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(0, t.Sub(now)), true
}

// cheapPoints is the most points a cheap request asks for (instant queries, short
// ranges): only cheap requests may use the reserve (see scheduler).
const cheapPoints = 60

// scheduler paces the requests of one traffic class (a region's queries or its discovery).
// Its slots and its rate are split in two pools: a reserve that only cheap requests use
// and a shared pool that heavy ones use too, cheap ones trying the reserve first. So heavy
// requests (long ranges) hold at most half of the slots and send at most half of any
// second's requests, and a stat panel's one-point query finds room beside them at once.
type scheduler struct {
	pools [2]pool // the reserve, then the shared pool
	// mu keeps the buckets' clock readings in order: a bucket given a reading older than
	// its last would credit the time in between twice.
	mu   sync.Mutex
	rps  float64 // as configured, for LimitError
	conc int
}

type pool struct {
	slots  chan struct{} // one element per request in flight; capacity 0: no slots
	tokens *rate.Limiter // nil: no rate limit
}

// newScheduler paces rps requests per second (rps ≤ 0: no pacing) with conc in flight.
// A fractional rate is rounded down per second; below one per second, requests go at most
// one per 1/rps, so the setting is never exceeded.
func newScheduler(rps float64, conc int) *scheduler {
	conc = max(conc, 1)
	s := &scheduler{rps: rps, conc: conc}
	s.pools[0].slots = make(chan struct{}, conc/2)
	s.pools[1].slots = make(chan struct{}, conc-conc/2)
	switch {
	case rps <= 0 || math.IsInf(rps, 1):
	case rps < 2:
		// Nothing to split: both pools draw on one bucket.
		b := rate.NewLimiter(rate.Limit(min(rps, 1)), 1)
		s.pools[0].tokens, s.pools[1].tokens = b, b
	default:
		n := int(min(rps, math.MaxInt32))
		s.pools[0].tokens, s.pools[1].tokens = bucket(n/2), bucket(n-n/2)
	}
	return s
}

// bucket lets at most n ≥ 1 requests through in any one-second window. A bucket of b
// tokens refilled at r per second lets at most b+r-1 through in one (it holds at most b
// as the window opens and gains less than r before it closes), so b+r = n+1. Half of n is
// the burst, so a dashboard's first requests go together, and the rest the refill.
func bucket(n int) *rate.Limiter {
	b := max(1, n/2)
	return rate.NewLimiter(rate.Limit(n+1-b), b)
}

// LimitError is a request our own limiter did not send: waiting for its turn would pass
// the request's deadline. It unwraps to context.DeadlineExceeded.
type LimitError struct {
	RequestsPerSecond float64 // negative: no rate limit, concurrency was the bottleneck
	MaxConcurrency    int
	Waited            time.Duration
}

func (e *LimitError) Error() string {
	rate := "no request rate limit"
	if e.RequestsPerSecond >= 0 {
		rate = fmt.Sprintf("requestsPerSecond %g", e.RequestsPerSecond)
	}
	return fmt.Sprintf("the datasource's own request limiter (%s, maxConcurrency %d) held this request for %s and it would not be sent before the query's deadline: "+
		"raise requestsPerSecond or maxConcurrency in the datasource settings (CloudWatch allows 300 requests per second and 30 concurrent queries per account), "+
		"show fewer panels at once, or raise the query timeout",
		rate, e.MaxConcurrency, e.Waited.Round(time.Millisecond))
}

func (e *LimitError) Unwrap() error { return context.DeadlineExceeded }

// acquire waits until a request of cost points (1 for an instant query) may be sent and
// returns the function that frees its slot. The slot comes first and the token with it in
// hand, so the token is taken the moment the request goes and the sends keep to the rate.
func (s *scheduler) acquire(ctx context.Context, cost int) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	arrived := time.Now()
	pools := s.pools[:]
	if cost > cheapPoints {
		pools = pools[1:]
	}
	slots, err := slot(ctx, pools)
	if err != nil {
		return nil, s.held(err, arrived)
	}
	release := func() { <-slots }
	if err := s.pace(ctx, pools, arrived); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// slot takes a slot of the first of pools that has one free, else of the first to free one.
func slot(ctx context.Context, pools []pool) (chan struct{}, error) {
	for _, p := range pools {
		select {
		case p.slots <- struct{}{}:
			return p.slots, nil
		default:
		}
	}
	first, last := pools[0].slots, pools[len(pools)-1].slots
	select {
	case first <- struct{}{}:
		return first, nil
	case last <- struct{}{}:
		return last, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pace takes a token of the first of pools that has one, waiting for the first to gain one
// when none has. A wait past ctx's deadline is refused at once.
func (s *scheduler) pace(ctx context.Context, pools []pool, arrived time.Time) error {
	if pools[0].tokens == nil {
		return nil
	}
	for {
		s.mu.Lock()
		now := time.Now()
		wait := time.Duration(math.MaxInt64)
		for _, p := range pools {
			if p.tokens.AllowN(now, 1) {
				s.mu.Unlock()
				return nil
			}
			wait = min(wait, untilToken(p.tokens, now))
		}
		s.mu.Unlock()
		if deadline, ok := ctx.Deadline(); ok && now.Add(wait).After(deadline) {
			return s.refusal(now.Sub(arrived))
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return s.held(err, arrived)
		}
	}
}

// untilToken is how long from now until l holds a whole token, rounded up.
func untilToken(l *rate.Limiter, now time.Time) time.Duration {
	need := 1 - l.TokensAt(now)
	return time.Duration(math.Ceil(need / float64(l.Limit()) * float64(time.Second)))
}

// held is the error of a request ctx ended while the limiter held it: a deadline is the
// limiter's doing (a LimitError), a cancellation is not.
func (s *scheduler) held(err error, arrived time.Time) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return s.refusal(time.Since(arrived))
	}
	return err
}

func (s *scheduler) refusal(waited time.Duration) *LimitError {
	return &LimitError{RequestsPerSecond: s.rps, MaxConcurrency: s.conc, Waited: waited}
}

// requestCost is the number of points a request asks for: a range query's steps, 1 otherwise.
func requestCost(p url.Values) int {
	step, err := strconv.ParseFloat(p.Get("step"), 64)
	if err != nil || step <= 0 {
		return 1
	}
	start, err1 := strconv.ParseFloat(p.Get("start"), 64)
	end, err2 := strconv.ParseFloat(p.Get("end"), 64)
	if err1 != nil || err2 != nil || end < start {
		return 1
	}
	return int(min((end-start)/step, math.MaxInt32)) + 1
}
