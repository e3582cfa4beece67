package promclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

const okBody = `{"status":"success","data":{"resultType":"vector","result":[]}}`

// seen is one request as the fake CloudWatch received it.
type seen struct {
	Method, Path, RawQuery, ContentType string
	Form                                url.Values
}

// fakeCW records requests and answers from a script of (status, header, body).
type fakeCW struct {
	mu      sync.Mutex
	reqs    []seen
	answers []answer
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func (f *fakeCW) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(raw))
	if r.Method == http.MethodGet {
		form = r.URL.Query()
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, ContentType: r.Header.Get("Content-Type"), Form: form})
	a := answer{status: http.StatusOK, body: okBody}
	if len(f.answers) > 0 {
		a = f.answers[0]
		if len(f.answers) > 1 {
			f.answers = f.answers[1:]
		}
	}
	f.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *fakeCW) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// sleeps records backoff delays instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func newTestClient(t *testing.T, h http.Handler, mutate func(*Options)) (*Client, *sleeps) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	sl := &sleeps{}
	opts := Options{BaseURL: u, QueryRPS: -1, DiscoveryRPS: -1, Sleep: sl.sleep, Jitter: func() float64 { return 0.5 }}
	if mutate != nil {
		mutate(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, sl
}

var (
	t0 = time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func TestRequestShape(t *testing.T) {
	name := "@resource.host.id"
	match := `{"vllm:num_requests_running","@aws.region"="us-east-1"}`
	tests := []struct {
		name       string
		method     string // Options.Method
		basePath   string
		timeout    time.Duration
		call       func(c *Client, d Decode) error
		wantMethod string
		wantPath   string
		wantForm   url.Values
	}{
		{
			name: "instant query POST, limit clamped", call: func(c *Client, d Decode) error {
				return c.Query(context.Background(), `sum(rate({"x"}[5m]))`, t0.Add(500*time.Millisecond), 600, d)
			},
			wantMethod: "POST", wantPath: "/api/v1/query",
			wantForm: url.Values{"query": {`sum(rate({"x"}[5m]))`}, "time": {"1780660800.5"}, "limit": {"500"}},
		},
		{
			name: "instant query GET, no limit, timeout sent", method: "get", timeout: 30 * time.Second, call: func(c *Client, d Decode) error {
				return c.Query(context.Background(), "1+1", t0, 0, d)
			},
			wantMethod: "GET", wantPath: "/api/v1/query",
			wantForm: url.Values{"query": {"1+1"}, "time": {"1780660800"}, "timeout": {"30"}},
		},
		{
			name: "range query with fractional step", call: func(c *Client, d Decode) error {
				return c.QueryRange(context.Background(), "up", t0, t1, 1500*time.Millisecond, 10, d)
			},
			wantMethod: "POST", wantPath: "/api/v1/query_range",
			wantForm: url.Values{"query": {"up"}, "start": {"1780660800"}, "end": {"1780664400"}, "step": {"1.5"}, "limit": {"10"}},
		},
		{
			name: "labels, limit clamped to discovery max", call: func(c *Client, d Decode) error {
				return c.Labels(context.Background(), []string{match}, t0, t1, 40000, d)
			},
			wantMethod: "POST", wantPath: "/api/v1/labels",
			wantForm: url.Values{"match[]": {match}, "start": {"1780660800"}, "end": {"1780664400"}, "limit": {"10000"}},
		},
		{
			name: "label values always GET, @ escaped, dot kept", call: func(c *Client, d Decode) error {
				return c.LabelValues(context.Background(), name, []string{match, "up"}, time.Time{}, time.Time{}, 5, d)
			},
			wantMethod: "GET", wantPath: "/api/v1/label/%40resource.host.id/values",
			wantForm: url.Values{"match[]": {match, "up"}, "limit": {"5"}},
		},
		{
			name: "label values under a base path, slash and space escaped", basePath: "/cw/", call: func(c *Client, d Decode) error {
				return c.LabelValues(context.Background(), "a/b c", nil, time.Time{}, time.Time{}, 0, d)
			},
			wantMethod: "GET", wantPath: "/cw/api/v1/label/a%2Fb%20c/values", wantForm: url.Values{},
		},
		{
			name: "series GET", method: "GET", call: func(c *Client, d Decode) error {
				return c.Series(context.Background(), []string{match}, t0, t1, 0, d)
			},
			wantMethod: "GET", wantPath: "/api/v1/series",
			wantForm: url.Values{"match[]": {match}, "start": {"1780660800"}, "end": {"1780664400"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeCW{}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			u, _ := url.Parse(srv.URL + tc.basePath)
			c, err := New(Options{BaseURL: u, Method: tc.method, QueryTimeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			if err := tc.call(c, Raw(&body)); err != nil {
				t.Fatal(err)
			}
			if string(body) != okBody {
				t.Errorf("response %s", body)
			}
			reqs := fake.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.wantMethod || r.Path != tc.wantPath {
				t.Errorf("got %s %s, want %s %s", r.Method, r.Path, tc.wantMethod, tc.wantPath)
			}
			if fmt.Sprint(r.Form) != fmt.Sprint(tc.wantForm) {
				t.Errorf("form %v, want %v", r.Form, tc.wantForm)
			}
			if r.Method == "POST" && (r.ContentType != "application/x-www-form-urlencoded" || r.RawQuery != "") {
				t.Errorf("POST must be a form body: content type %q, query %q", r.ContentType, r.RawQuery)
			}
		})
	}
}

func TestSignedEndToEnd(t *testing.T) {
	now := t0
	verifier := &sigv4verify.Verifier{Region: "us-east-1", Credentials: map[string]sigv4verify.Credential{
		"AKIDTEST": {AccessKeyID: "AKIDTEST", SecretAccessKey: "s3cr3t"},
	}, Now: func() time.Time { return now }}
	fake := &fakeCW{}
	verifying := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := verifier.Verify(r); err != nil {
			sigv4verify.WriteAuthError(w, err)
			return
		}
		fake.ServeHTTP(w, r)
	})
	for _, tc := range []struct {
		name, region string
		wantType     string
	}{
		{name: "accepted", region: "us-east-1"},
		{name: "wrong region", region: "eu-west-1", wantType: sigv4verify.TypeInvalidSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			creds := credentials.NewStaticCredentialsProvider("AKIDTEST", "s3cr3t", "")
			signer := awsauth.NewSigner(http.DefaultTransport, creds, tc.region, awsauth.SigningService, func() time.Time { return now })
			c, _ := newTestClient(t, verifying, func(o *Options) { o.Transport = signer })
			calls := []func() error{
				func() error {
					return c.Query(context.Background(), `{"vllm:num_requests_running","@aws.region"="us-east-1"}`, t0, 500, nil)
				},
				func() error {
					return c.LabelValues(context.Background(), "@resource.host.id", []string{`{"@aws.account"="1"}`}, t0, t1, 0, nil)
				},
				func() error { return c.Series(context.Background(), []string{"up"}, t0, t1, 0, nil) },
			}
			for i, call := range calls {
				err := call()
				if tc.wantType == "" {
					if err != nil {
						t.Errorf("call %d: %v", i, err)
					}
					continue
				}
				var apiErr *APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("call %d: want *APIError, got %v", i, err)
				}
				if apiErr.Status != 403 || apiErr.Type != tc.wantType || apiErr.Attempts != 1 || apiErr.RequestID == "" {
					t.Errorf("call %d: %+v", i, apiErr)
				}
				if !strings.Contains(apiErr.Error(), sigv4verify.MsgWrongRegion) || apiErr.Cause != CauseWrongRegion {
					t.Errorf("call %d: message lacks CloudWatch's words or the cause is not the region: %s", i, apiErr)
				}
			}
		})
	}
}

func TestRetry(t *testing.T) {
	throttle := answer{status: 422, body: `{"status":"error","errorType":"execution","error":"Rate exceeded: the query TPS limit of 300 per account was reached"}`}
	concurrency := answer{status: 429, body: `{"status":"error","errorType":"too_many_requests","error":"Too many concurrent requests"}`}
	ok := answer{status: 200, body: okBody}
	tests := []struct {
		name         string
		answers      []answer
		deadline     time.Duration
		wantAttempts int
		wantStatus   int // of the final error; 0 for success
		wantSleeps   []time.Duration
	}{
		{name: "422 throttle then ok", answers: []answer{throttle, ok}, wantAttempts: 2, wantSleeps: []time.Duration{50 * time.Millisecond}},
		{name: "429 thrice then ok, backoff capped", answers: []answer{concurrency, concurrency, concurrency, ok}, wantAttempts: 4,
			wantSleeps: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond}},
		{name: "503 until attempts run out", answers: []answer{{status: 503, body: "upstream busy"}}, wantAttempts: 4, wantStatus: 503,
			wantSleeps: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond}},
		{name: "422 range error is final", answers: []answer{{status: 422, body: `{"status":"error","errorType":"execution","error":"query time range exceeds the maximum of 7 days"}`}}, wantAttempts: 1, wantStatus: 422},
		{name: "400 never retried", answers: []answer{{status: 400, body: `{"status":"error","errorType":"bad_data","error":"unclosed left parenthesis"}`}}, wantAttempts: 1, wantStatus: 400},
		{name: "403 never retried", answers: []answer{{status: 403, body: `{"message":"denied"}`}}, wantAttempts: 1, wantStatus: 403},
		{name: "404 never retried", answers: []answer{{status: 404, body: "not found"}}, wantAttempts: 1, wantStatus: 404},
		{name: "501 never retried", answers: []answer{{status: 501, body: "nope"}}, wantAttempts: 1, wantStatus: 501},
		{name: "Retry-After honoured", answers: []answer{{status: 429, header: map[string]string{"Retry-After": "0"}, body: "busy"}, ok}, wantAttempts: 2, wantSleeps: []time.Duration{0}},
		{name: "Retry-After beyond max delay gives up", answers: []answer{{status: 429, header: map[string]string{"Retry-After": "60"}, body: "busy"}}, wantAttempts: 1, wantStatus: 429},
		{name: "backoff past the deadline gives up with CloudWatch's error", answers: []answer{throttle}, deadline: 40 * time.Millisecond, wantAttempts: 1, wantStatus: 422},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeCW{answers: tc.answers}
			c, sl := newTestClient(t, fake, func(o *Options) {
				o.Retry = RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond}
			})
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			err := c.Query(ctx, "up", t0, 0, nil)
			if got := len(fake.requests()); got != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", got, tc.wantAttempts)
			}
			if fmt.Sprint(sl.d) != fmt.Sprint(tc.wantSleeps) {
				t.Errorf("slept %v, want %v", sl.d, tc.wantSleeps)
			}
			if tc.wantStatus == 0 {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Status != tc.wantStatus || apiErr.Attempts != tc.wantAttempts {
				t.Fatalf("want APIError %d after %d attempts, got %v", tc.wantStatus, tc.wantAttempts, err)
			}
		})
	}
}

func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{v: "3", want: 3 * time.Second, ok: true},
		{v: now.Add(2 * time.Second).Format(http.TimeFormat), want: 2 * time.Second, ok: true},
		{v: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, ok: true},
		{v: "-1"},
		{v: "soon"},
		{v: ""},
	} {
		got, ok := retryAfter(tc.v, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		header        map[string]string
		body          string
		wantType      string
		wantMsg       string
		wantThrottled bool
		wantRetry     bool
		wantSource    backend.ErrorSource
		wantCause     Cause
	}{
		{name: "prometheus envelope", status: 400, body: `{"status":"error","errorType":"bad_data","error":"unexpected left brace inside braces"}`,
			wantType: "bad_data", wantMsg: "unexpected left brace inside braces", wantSource: backend.ErrorSourceDownstream},
		{name: "422 TPS throttle", status: 422, body: `{"status":"error","errorType":"execution","error":"Rate exceeded"}`,
			wantType: "execution", wantMsg: "Rate exceeded", wantThrottled: true, wantRetry: true, wantSource: backend.ErrorSourceDownstream, wantCause: CauseThrottledRate},
		{name: "422 throttling exception type", status: 422, header: map[string]string{"x-amzn-ErrorType": "ThrottlingException"}, body: `{"message":"slow down"}`,
			wantType: "ThrottlingException", wantMsg: "slow down", wantThrottled: true, wantRetry: true, wantSource: backend.ErrorSourceDownstream, wantCause: CauseThrottledRate},
		{name: "422 too many samples is not throttling", status: 422, body: `{"status":"error","errorType":"execution","error":"query processed too many samples, see https://docs.aws.amazon.com"}`,
			wantType: "execution", wantMsg: "query processed too many samples, see https://docs.aws.amazon.com", wantSource: backend.ErrorSourceDownstream},
		{name: "429 concurrency", status: 429, body: `{"status":"error","errorType":"too_many_requests","error":"Too many concurrent requests"}`,
			wantType: "too_many_requests", wantMsg: "Too many concurrent requests", wantThrottled: true, wantRetry: true, wantSource: backend.ErrorSourceDownstream, wantCause: CauseThrottledConcurrency},
		{name: "403 AWS __type with namespace", status: 403, header: map[string]string{"x-amzn-RequestId": "req-1"},
			body:     `{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token included in the request is invalid."}`,
			wantType: "UnrecognizedClientException", wantMsg: "The security token included in the request is invalid.", wantSource: backend.ErrorSourceDownstream, wantCause: CauseUnknownCredentials},
		{name: "403 type only in header with suffix", status: 403, header: map[string]string{"x-amzn-ErrorType": "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/"},
			body: `{"message":"Credential should be scoped to correct service: 'monitoring'."}`, wantType: "InvalidSignatureException",
			wantMsg: "Credential should be scoped to correct service: 'monitoring'.", wantSource: backend.ErrorSourceDownstream, wantCause: CauseWrongService},
		{name: "403 capitalised Message", status: 403, body: `{"Message":"User: arn:aws:iam::1:user/x is not authorized to perform: cloudwatch:GetMetricData"}`,
			wantMsg: "User: arn:aws:iam::1:user/x is not authorized to perform: cloudwatch:GetMetricData", wantSource: backend.ErrorSourceDownstream, wantCause: CauseAccessDenied},
		{name: "502 HTML from a proxy", status: 502, body: "<html>" + strings.Repeat("x", 1000) + "</html>",
			wantMsg: "<html>" + strings.Repeat("x", maxMessage-6) + "…", wantRetry: true, wantSource: backend.ErrorSourceDownstream},
		{name: "500 empty body", status: 500, wantMsg: "Internal Server Error", wantRetry: true, wantSource: backend.ErrorSourceDownstream},
		{name: "405 is still CloudWatch's answer", status: 405, body: `{"status":"error","errorType":"bad_data","error":"method not allowed"}`,
			wantType: "bad_data", wantMsg: "method not allowed", wantSource: backend.ErrorSourceDownstream},
		{name: "expired signature", status: 403, body: `{"__type":"InvalidSignatureException","message":"Signature expired: 20260101T000000Z is now earlier than 20260101T000500Z"}`,
			wantType: "InvalidSignatureException", wantMsg: "Signature expired: 20260101T000000Z is now earlier than 20260101T000500Z", wantSource: backend.ErrorSourceDownstream, wantCause: CauseClockSkew},
		{name: "wrong region", status: 403, body: `{"__type":"InvalidSignatureException","message":"Credential should be scoped to a valid region."}`,
			wantType: "InvalidSignatureException", wantMsg: "Credential should be scoped to a valid region.", wantSource: backend.ErrorSourceDownstream, wantCause: CauseWrongRegion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			e := parseError(tc.status, h, []byte(tc.body))
			if e.Type != tc.wantType || e.Message != tc.wantMsg || e.Throttled != tc.wantThrottled || e.Retryable() != tc.wantRetry {
				t.Errorf("got type %q msg %q throttled %v retry %v", e.Type, e.Message, e.Throttled, e.Retryable())
			}
			if e.Source() != tc.wantSource || backend.IsDownstreamError(e) != (tc.wantSource == backend.ErrorSourceDownstream) {
				t.Errorf("source %v (IsDownstreamError %v), want %v", e.Source(), backend.IsDownstreamError(e), tc.wantSource)
			}
			if e.Cause != tc.wantCause || !strings.Contains(e.Error(), tc.wantMsg) {
				t.Errorf("cause %d, want %d; Error() %q", e.Cause, tc.wantCause, e.Error())
			}
			if id := h.Get("x-amzn-RequestId"); id != "" && !strings.Contains(e.Error(), id) {
				t.Errorf("Error() %q lacks the request id", e.Error())
			}
		})
	}
}

func TestConcurrencyBound(t *testing.T) {
	const limit = 3
	var inFlight, maxInFlight atomic.Int32
	arrived := make(chan struct{}, 10)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/labels" {
			io.WriteString(w, `{"status":"success","data":[]}`)
			return
		}
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		io.WriteString(w, okBody)
	})
	c, _ := newTestClient(t, h, func(o *Options) { o.MaxConcurrency = limit })
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			err := c.Query(context.Background(), "up", t0, 0, nil)
			errs <- err
		})
	}
	for range limit {
		<-arrived
	}
	// Queries hold every query slot; discovery has its own slots and still gets through.
	if err := c.Labels(context.Background(), nil, time.Time{}, time.Time{}, 0, nil); err != nil {
		t.Fatalf("discovery blocked by queries: %v", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := maxInFlight.Load(); got != limit {
		t.Errorf("max in flight %d, want exactly %d", got, limit)
	}
}

// TestRateLimiting: at 0.001 requests per second a class sends one request and refuses
// the next at once (its turn is 1000 s off, past the minute's deadline), so each attempt
// takes a token and each class has its own bucket.
func TestRateLimiting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("a retry takes a token of the query class", func(t *testing.T) {
		fake := &fakeCW{answers: []answer{{status: 429, body: "busy"}, {status: 200, body: okBody}}}
		c, _ := newTestClient(t, fake, func(o *Options) { o.QueryRPS = 0.001 })
		var le *LimitError
		if err := c.Query(ctx, "up", t0, 0, nil); !errors.As(err, &le) || le.RequestsPerSecond != 0.001 {
			t.Errorf("retry after a 429: err %v, want a *LimitError of requestsPerSecond 0.001", err)
		}
		if n := len(fake.requests()); n != 1 {
			t.Errorf("%d requests sent, want 1", n)
		}
		for range 2 {
			if err := c.LabelValues(ctx, "job", nil, time.Time{}, time.Time{}, 0, nil); err != nil {
				t.Errorf("discovery behind the query class's empty bucket: %v", err)
			}
		}
	})
	t.Run("discovery has its own bucket", func(t *testing.T) {
		fake := &fakeCW{}
		c, _ := newTestClient(t, fake, func(o *Options) { o.DiscoveryRPS = 0.001 })
		if err := c.Series(ctx, []string{"up"}, t0, t1, 0, nil); err != nil {
			t.Fatal(err)
		}
		var le *LimitError
		if err := c.Series(ctx, []string{"up"}, t0, t1, 0, nil); !errors.As(err, &le) {
			t.Errorf("second discovery call: err %v, want a *LimitError", err)
		}
		for range 2 {
			if err := c.Query(ctx, "up", t0, 0, nil); err != nil {
				t.Errorf("query behind the discovery class's empty bucket: %v", err)
			}
		}
		if n := len(fake.requests()); n != 3 {
			t.Errorf("%d requests sent, want 3", n)
		}
	})
	t.Run("the second request would wait past the deadline: our limiter says so", func(t *testing.T) {
		fake := &fakeCW{}
		c, _ := newTestClient(t, fake, func(o *Options) { o.QueryRPS = 0.5 })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Query(ctx, "up", t0, 0, nil); err != nil {
			t.Fatal(err)
		}
		short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel2()
		err := c.Query(short, "up", t0, 0, nil)
		var le *LimitError
		if !errors.As(err, &le) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "requestsPerSecond 0.5") {
			t.Errorf("err %v, want a *LimitError naming requestsPerSecond that unwraps to DeadlineExceeded", err)
		}
		if n := len(fake.requests()); n != 1 {
			t.Errorf("%d requests sent, want 1", n)
		}
	})
}

func TestClientSideErrorsSendNothing(t *testing.T) {
	fake := &fakeCW{}
	c, _ := newTestClient(t, fake, nil)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"empty expr":       func() error { err := c.Query(ctx, "  ", t0, 0, nil); return err },
		"zero step":        func() error { err := c.QueryRange(ctx, "up", t0, t1, 0, 0, nil); return err },
		"end before start": func() error { err := c.QueryRange(ctx, "up", t1, t0, time.Minute, 0, nil); return err },
		"empty label":      func() error { err := c.LabelValues(ctx, "", nil, t0, t1, 0, nil); return err },
		"series no match":  func() error { err := c.Series(ctx, nil, t0, t1, 0, nil); return err },
	} {
		if err := call(); err == nil || !backend.IsDownstreamError(err) {
			t.Errorf("%s: err %v, want a downstream error", name, err)
		}
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
	})
	c, _ := newTestClient(t, h, nil)
	err := c.Query(context.Background(), "up", t0, 0, nil)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusFound || apiErr.Cause != CauseRedirect {
		t.Fatalf("err %v, want a 302 APIError", err)
	}
	if hits.Load() != 1 {
		t.Errorf("%d hits, want 1", hits.Load())
	}
}

func TestResponseTooLarge(t *testing.T) {
	c, _ := newTestClient(t, &fakeCW{}, func(o *Options) { o.MaxResponseBytes = 10 })
	if err := c.Query(context.Background(), "up", t0, 0, nil); err == nil || !strings.Contains(err.Error(), "more than 10 bytes") {
		t.Errorf("err %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	good, _ := url.Parse("https://monitoring.us-east-1.amazonaws.com")
	for name, opts := range map[string]Options{
		"no base URL":          {},
		"relative base URL":    {BaseURL: &url.URL{Path: "/x"}},
		"ftp base URL":         {BaseURL: &url.URL{Scheme: "ftp", Host: "x"}},
		"bad method":           {BaseURL: good, Method: "PUT"},
		"negative concurrency": {BaseURL: good, MaxConcurrency: -1},
		"negative timeout":     {BaseURL: good, QueryTimeout: -time.Second},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if _, err := New(Options{BaseURL: good, Method: "get"}); err != nil {
		t.Errorf("lower-case GET: %v", err)
	}
}

// maxInWindow is the most admissions in any half-open window [t, t+w): the busiest such
// window starts at an admission, so checking those covers every window.
func maxInWindow(times []time.Time, w time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i := range times {
		j := i
		for j < len(times) && times[j].Before(times[i].Add(w)) {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// arrival is one request of a generated load: when it comes (after the start), its cost
// in points and how long it holds its slot once admitted.
type arrival struct {
	at   time.Duration
	cost int
	hold time.Duration
}

func (a arrival) heavy() bool { return a.cost > cheapPoints }

// admissions runs the arrivals through s on synctest's fake clock (call it inside
// synctest.Test) and returns when each was admitted, after the start; it checks on the way
// that no more than conc requests, and no more than the shared slots of heavy ones, were
// ever in flight.
func admissions(t *testing.T, s *scheduler, arrivals []arrival) []time.Duration {
	t.Helper()
	start := time.Now()
	admitted := make([]time.Duration, len(arrivals))
	var (
		mu                    sync.Mutex
		inFlight, heavy, peak int
		heavyPeak             int
		wg                    sync.WaitGroup
	)
	for i, a := range arrivals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(a.at)
			release, err := s.acquire(context.Background(), a.cost)
			if err != nil {
				t.Errorf("acquire without deadline: %v", err)
				return
			}
			mu.Lock()
			admitted[i] = time.Since(start)
			inFlight++
			peak = max(peak, inFlight)
			if a.heavy() {
				heavy++
				heavyPeak = max(heavyPeak, heavy)
			}
			mu.Unlock()
			time.Sleep(a.hold)
			mu.Lock()
			inFlight--
			if a.heavy() {
				heavy--
			}
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	if peak > s.conc {
		t.Errorf("%d in flight, max concurrency %d", peak, s.conc)
	}
	if heavyPeak > s.conc-s.conc/2 {
		t.Errorf("%d heavy requests in flight, max concurrency %d less %d reserved", heavyPeak, s.conc, s.conc/2)
	}
	return admitted
}

// at turns offsets after start into times, for maxInWindow, of the arrivals keep accepts
// (nil: all).
func at(arrivals []arrival, admitted []time.Duration, keep func(arrival) bool) []time.Time {
	var out []time.Time
	for i, d := range admitted {
		if keep == nil || keep(arrivals[i]) {
			out = append(out, t0.Add(d))
		}
	}
	return out
}

// TestSchedulerNoWindowExceedsRate drives the scheduler with random arrival patterns
// (bursts, idle gaps, mixed costs and hold times) from fixed seeds on synctest's fake
// clock, and checks every one-second window of admissions against the rate, and the
// heavy ones' against their half of it.
func TestSchedulerNoWindowExceedsRate(t *testing.T) {
	for _, rps := range []float64{0.5, 1, 2.5, 5, 20, 300} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("rps=%g/seed=%d", rps, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(rps*10)))
					s := newScheduler(rps, 1+rng.IntN(30))
					// Bursts separated by idle gaps long enough to refill the buckets.
					arrivals := make([]arrival, int(math.Max(8, 4*rps)))
					offset := time.Duration(0)
					for i := range arrivals {
						if rng.IntN(10) == 0 {
							offset += time.Duration(1+rng.IntN(5)) * time.Second
						} else if rng.IntN(2) == 0 {
							offset += time.Duration(rng.IntN(50)) * time.Millisecond
						}
						cost := 1 + rng.IntN(2000)
						if rng.IntN(3) == 0 {
							cost = 1 // instant queries
						}
						arrivals[i] = arrival{at: offset, cost: cost, hold: time.Duration(rng.IntN(300)) * time.Millisecond}
					}
					admitted := admissions(t, s, arrivals)
					allowed := max(1, int(math.Floor(rps)))
					if got := maxInWindow(at(arrivals, admitted, nil), time.Second); got > allowed {
						t.Errorf("%d admissions in one second, rate %g allows %d", got, rps, allowed)
					}
					if rps < 1 {
						if got := maxInWindow(at(arrivals, admitted, nil), time.Duration(float64(time.Second)/rps)); got > 1 {
							t.Errorf("%d admissions within 1/rps at rate %g", got, rps)
						}
					}
					if got, share := maxInWindow(at(arrivals, admitted, arrival.heavy), time.Second), allowed-allowed/2; got > share {
						t.Errorf("%d heavy admissions in one second, rate %g leaves them %d", got, rps, share)
					}
				})
			})
		}
	}
}

// TestSchedulerUsesItsRate: a backlog fills the busiest second to the rate, not below it
// (a limiter that admitted one request per second would pass the upper-bound test).
func TestSchedulerUsesItsRate(t *testing.T) {
	for _, rps := range []float64{1, 5, 20, 300} {
		t.Run(fmt.Sprint(rps), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				arrivals := make([]arrival, int(3*rps))
				for i := range arrivals {
					arrivals[i] = arrival{cost: 1}
				}
				got := maxInWindow(at(arrivals, admissions(t, newScheduler(rps, 1000), arrivals), nil), time.Second)
				if got != int(rps) {
					t.Errorf("busiest second had %d admissions, want exactly %g", got, rps)
				}
			})
		})
	}
}

// TestSchedulerCheapShare: a backlog of range queries that saturates their slots and their
// half of the rate, with cheap requests arriving at random moments no faster than the
// reserve refills, each held a second: every cheap request is admitted the moment it
// arrives, while the backlog still uses its whole share.
func TestSchedulerCheapShare(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 24))
				const rps, conc = 20, 10
				var arrivals []arrival
				for range 150 {
					arrivals = append(arrivals, arrival{at: time.Duration(rng.IntN(3000)) * time.Millisecond, cost: cheapPoints + 1 + rng.IntN(3000),
						hold: time.Duration(rng.IntN(100)) * time.Millisecond})
				}
				// The reserve holds 5 slots and refills 6 tokens a second: one cheap request
				// every 200 ms or more, each done a second later, needs at most 5 of each.
				for next := time.Duration(0); next < 5*time.Second; next += time.Duration(200+rng.IntN(300)) * time.Millisecond {
					arrivals = append(arrivals, arrival{at: next, cost: 1 + rng.IntN(cheapPoints), hold: time.Second})
				}
				admitted := admissions(t, newScheduler(rps, conc), arrivals)
				for i, a := range arrivals {
					if !a.heavy() && admitted[i] != a.at {
						t.Errorf("cheap request arriving at %s admitted at %s", a.at, admitted[i])
					}
				}
				if got := maxInWindow(at(arrivals, admitted, arrival.heavy), time.Second); got != rps/2 {
					t.Errorf("the backlog's busiest second had %d admissions, want its whole share %d", got, rps/2)
				}
			})
		})
	}
}

// TestSchedulerReservesSlotsForCheap: range queries arriving first take every slot they
// may; an instant query arriving after them is admitted while they all still hold theirs
// (the clock does not move), and the heavy ones left over wait for their slots.
func TestSchedulerReservesSlotsForCheap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const conc = 10
		s := newScheduler(20, conc)
		var (
			mu       sync.Mutex
			admitted []string
			releases []func()
		)
		acquire := func(name string, cost int) {
			release, err := s.acquire(context.Background(), cost)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			admitted = append(admitted, name)
			releases = append(releases, release)
			mu.Unlock()
		}
		for i := range conc {
			go acquire(fmt.Sprintf("range-%d", i), 361)
		}
		synctest.Wait()
		go acquire("instant", 1)
		synctest.Wait()
		mu.Lock()
		got, first := slices.Clone(admitted), slices.Clone(releases)
		mu.Unlock()
		if len(got) != conc/2+1 || got[len(got)-1] != "instant" {
			t.Fatalf("admitted %v: want %d range queries, then the instant one", got, conc/2)
		}
		for _, r := range first {
			r()
		}
		time.Sleep(time.Second) // the heavy ones' tokens refill
		mu.Lock()
		defer mu.Unlock()
		if len(admitted) != conc+1 {
			t.Errorf("after the releases %d admitted, want all %d", len(admitted), conc+1)
		}
		for _, r := range releases[len(got):] {
			r()
		}
	})
}

// TestSchedulerIdleSendsAtOnce: on an idle scheduler a lone request goes without delay,
// cheap or heavy, at first and again after an idle moment, even with a deadline a few
// milliseconds off.
func TestSchedulerIdleSendsAtOnce(t *testing.T) {
	for _, rps := range []float64{-1, 0.5, 1, 2.5, 20, 300} {
		for _, conc := range []int{1, 2, 10} {
			for _, cost := range []int{1, 5000} {
				t.Run(fmt.Sprintf("rps=%g/conc=%d/cost=%d", rps, conc, cost), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						s := newScheduler(rps, conc)
						idle := time.Duration(float64(time.Second) / min(1, math.Abs(rps)))
						for round := range 3 {
							ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
							start := time.Now()
							release, err := s.acquire(ctx, cost)
							cancel()
							if err != nil || time.Since(start) != 0 {
								t.Fatalf("round %d: err %v after %s, want admitted at once", round, err, time.Since(start))
							}
							release()
							time.Sleep(idle)
						}
					})
				})
			}
		}
	}
}

// TestSchedulerDeadlinesAndCancellation: a request whose turn at the rate comes after its
// deadline is refused at once, one whose deadline passes while it waits for a slot when it
// passes, both naming the settings to raise; a cancellation ends the wait at once and is
// reported as such. No refused or canceled request keeps a slot or a token.
func TestSchedulerDeadlinesAndCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(1, 1)
		release, err := s.acquire(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = s.acquire(ctx, 1)
		var le *LimitError
		if !errors.As(err, &le) || time.Since(start) != 0 || le.RequestsPerSecond != 1 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v after %s, want an immediate *LimitError of requestsPerSecond 1", err, time.Since(start))
		}

		// Canceled while waiting for the token: back at once, and the token is still there.
		ctx2, cancel2 := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel2)
		start = time.Now()
		if _, err := s.acquire(ctx2, 1); !errors.Is(err, context.Canceled) || errors.As(err, &le) || time.Since(start) != 300*time.Millisecond {
			t.Errorf("canceled at 300 ms while waiting for the rate: err %v after %s", err, time.Since(start))
		}
		start = time.Now()
		hold, err := s.acquire(context.Background(), 1)
		if err != nil || time.Since(start) != 700*time.Millisecond {
			t.Fatalf("next request: err %v after %s, want sent when the token comes, 1 s after the first", err, time.Since(start))
		}

		// Behind the one slot, held: a deadline passes while it waits, a cancellation ends it.
		ctx3, cancel3 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel3()
		if _, err := s.acquire(ctx3, 1); !errors.As(err, &le) || le.Waited != 1500*time.Millisecond || le.MaxConcurrency != 1 {
			t.Errorf("err %v, want a *LimitError after 1.5 s naming maxConcurrency 1", err)
		}
		ctx4, cancel4 := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel4)
		start = time.Now()
		if _, err := s.acquire(ctx4, 5000); !errors.Is(err, context.Canceled) || errors.As(err, &le) || time.Since(start) != 100*time.Millisecond {
			t.Errorf("canceled at 100 ms while waiting for a slot: err %v after %s", err, time.Since(start))
		}
		hold()
		release, err = s.acquire(context.Background(), 5000)
		if err != nil {
			t.Fatal(err)
		}
		release()
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestClientNoBurstAfterIdle: after a long idle moment, twice the rate of requests at
// once must not all go out within one second.
func TestClientNoBurstAfterIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []time.Time
		transport := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, time.Now())
			mu.Unlock()
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(okBody)), Request: r}, nil
		})
		u, _ := url.Parse("http://127.0.0.1:1")
		c, err := New(Options{BaseURL: u, Transport: transport, QueryRPS: 20, MaxConcurrency: 30})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		var wg sync.WaitGroup
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Query(context.Background(), "up", t0, 0, nil); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got := maxInWindow(sent, time.Second); got > 20 {
			t.Errorf("%d requests sent within one second at requestsPerSecond 20", got)
		}
	})
}

func TestRequestCost(t *testing.T) {
	for _, tc := range []struct {
		p    url.Values
		want int
	}{
		{url.Values{"query": {"up"}, "time": {"100"}}, 1},
		{url.Values{"start": {"0"}, "end": {"3600"}, "step": {"60"}}, 61},
		{url.Values{"start": {"0"}, "end": {"21600"}, "step": {"15"}}, 1441},
		{url.Values{"start": {"10"}, "end": {"0"}, "step": {"1"}}, 1},
		{url.Values{"start": {"0"}, "end": {"1e300"}, "step": {"1e-300"}}, math.MaxInt32 + 1},
	} {
		if got := requestCost(tc.p); got != tc.want {
			t.Errorf("requestCost(%v) = %d, want %d", tc.p, got, tc.want)
		}
	}
}
