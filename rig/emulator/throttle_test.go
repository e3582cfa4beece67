package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRateLimits drives the token buckets with a test clock: no sleeping, no timing.
func TestRateLimits(t *testing.T) {
	type step struct {
		advance time.Duration
		path    string
		status  int
	}
	q, d := "/api/v1/query?query=1", "/api/v1/labels"
	cases := []struct {
		name   string
		limits Limits
		faults Faults
		steps  []step
		msg    string
	}{
		{"query TPS", Limits{QueryTPS: 2}, Faults{}, []step{{0, q, 200}, {0, q, 200}, {0, q, 422}, {0, d, 200}, {500 * time.Millisecond, q, 200}, {0, q, 422}, {time.Second, q, 200}},
			"Rate exceeded: the query TPS limit of 2 per account"},
		{"discovery TPS default 10", Limits{}, Faults{}, append(repeat(step{0, d, 200}, 10), step{0, d, 422}, step{0, q, 200}, step{100 * time.Millisecond, d, 200}, step{0, d, 422}),
			"Rate exceeded: the discovery TPS limit of 10 per account"},
		{"fractional TPS", Limits{QueryTPS: 0.5}, Faults{}, []step{{0, q, 200}, {time.Second, q, 422}, {time.Second, q, 200}}, "TPS limit of 0.5"},
		{"fault TPS across routes", Limits{QueryTPS: -1, DiscoveryTPS: -1}, Faults{TPS: 3}, []step{{0, q, 200}, {0, d, 200}, {0, "/api/v1/series?match[]=up&start=0&end=1", 200}, {0, q, 422}, {time.Second, d, 200}},
			"Rate exceeded: injected fault allows 3 requests per second"},
		{"off", Limits{QueryTPS: -1}, Faults{}, repeat(step{0, q, 200}, 400), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: t0}
			srv := newTestServer(t, Config{Limits: tc.limits, Faults: tc.faults, RateClock: c.now})
			sawMsg := false
			for i, s := range tc.steps {
				c.add(s.advance)
				r := call(t, nil, srv.URL, "GET", s.path, nil)
				if r.status != s.status {
					t.Fatalf("step %d %s: status %d, want %d: %s", i, s.path, r.status, s.status, r.raw)
				}
				if r.status == 422 {
					sawMsg = true
					if r.env.ErrorType != "execution" || !strings.Contains(r.env.Error, tc.msg) {
						t.Errorf("step %d: %s/%q, want execution containing %q", i, r.env.ErrorType, r.env.Error, tc.msg)
					}
				}
			}
			if tc.msg != "" && !sawMsg {
				t.Errorf("no step was throttled")
			}
		})
	}
}

func repeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// gatedQueryable holds Querier calls until the test releases them, so that requests
// stay in flight for as long as the test needs without timing. Once open it holds
// nothing more.
type gatedQueryable struct {
	storage.Queryable
	entered chan chan struct{}
	open    atomic.Bool
}

func (g *gatedQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	if !g.open.Load() {
		release := make(chan struct{})
		g.entered <- release
		<-release
	}
	return g.Queryable.Querier(mint, maxt)
}

// TestConcurrencyLimits keeps requests blocked in storage and checks that the next
// one of the same class is answered 429 while another class still passes.
func TestConcurrencyLimits(t *testing.T) {
	cases := []struct {
		name         string
		limits       Limits
		faults       Faults
		blocked      []string // requests held in storage
		rejected     string   // answered 429 while they are held
		msg          string
		stillAllowed string // a request that is not limited meanwhile ("" to skip)
	}{
		{"query", Limits{QueryConcurrency: 2}, Faults{}, []string{"/api/v1/query?query=up", "/api/v1/query?query=up"}, "/api/v1/query_range?query=1&start=0&end=60&step=15",
			"the query concurrency limit of 2 per account", "/api/v1/label/x/values"},
		{"discovery", Limits{DiscoveryConcurrency: 1}, Faults{}, []string{"/api/v1/labels"}, "/api/v1/series?match[]=up&start=0&end=1",
			"the discovery concurrency limit of 1 per account", "/api/v1/query?query=1%2B1"},
		{"fault across classes", Limits{}, Faults{Concurrency: 1}, []string{"/api/v1/labels"}, "/api/v1/query?query=1",
			"injected fault allows 1 in flight", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			g := &gatedQueryable{Queryable: db, entered: make(chan chan struct{})}
			tc.limits.QueryTPS, tc.limits.DiscoveryTPS = -1, -1
			srv := serve(t, Config{Limits: tc.limits, Faults: tc.faults}, g)

			var wg sync.WaitGroup
			statuses := make([]int, len(tc.blocked))
			var held []chan struct{}
			for i, path := range tc.blocked {
				wg.Go(func() {
					resp, err := http.Get(srv.URL + path)
					if err != nil {
						t.Errorf("held request: %v", err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					statuses[i] = resp.StatusCode
				})
				held = append(held, <-g.entered) // request i now occupies a slot
			}
			g.open.Store(true)
			r := call(t, nil, srv.URL, "GET", tc.rejected, nil)
			if r.status != http.StatusTooManyRequests || r.env.ErrorType != "too_many_requests" || !strings.Contains(r.env.Error, tc.msg) {
				t.Errorf("over the limit: %d %s, want 429 too_many_requests containing %q", r.status, r.raw, tc.msg)
			}
			if tc.stillAllowed != "" {
				if r := call(t, nil, srv.URL, "GET", tc.stillAllowed, nil); r.status != http.StatusOK {
					t.Errorf("other class must pass: %d %s", r.status, r.raw)
				}
			}
			for _, release := range held {
				close(release)
			}
			wg.Wait()
			for i, s := range statuses {
				if s != http.StatusOK {
					t.Errorf("held request %d finished with %d", i, s)
				}
			}
			// Slots are given back: the rejected request now passes.
			if r := call(t, nil, srv.URL, "GET", tc.rejected, nil); r.status != http.StatusOK {
				t.Errorf("after release: %d %s", r.status, r.raw)
			}
		})
	}
}

// TestEngineTimeout: CloudWatch answers its execution cap with 422, not Prometheus'
// 503, whether or not the engine counts scan costs (which moves where the deadline hits).
func TestEngineTimeout(t *testing.T) {
	for name, limits := range map[string]Limits{
		"scan caps on":  {Timeout: time.Nanosecond, QueryTPS: -1},
		"scan caps off": {Timeout: time.Nanosecond, QueryTPS: -1, SeriesScannedPerDay: -1, SamplesScannedPerDay: -1},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newTestServer(t, Config{Limits: limits})
			r := call(t, nil, srv.URL, "GET", "/api/v1/query", v("query", `sum(rate({"http_requests_total"}[5m]))`))
			if r.status != http.StatusUnprocessableEntity || r.env.ErrorType != "execution" || !strings.Contains(r.env.Error, "query timed out") {
				t.Fatalf("got %d %s, want 422 execution with a timeout message", r.status, r.raw)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	// Request and body faults that fire on every request.
	cases := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, resp *http.Response, body []byte, readErr error)
	}{
		{"5xx", Faults{ErrorRate: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"errorType":"unavailable"`) {
				t.Errorf("got %d %s, want 503 unavailable", resp.StatusCode, body)
			}
		}},
		{"truncated body", Faults{TruncateRate: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("reading a truncated body: err %v (body %q), want unexpected EOF", err, body)
			}
		}},
		{"malformed body", Faults{MalformedRate: 1}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(string(body), `{"status":"success"`) || strings.HasSuffix(string(body), "}") {
				t.Errorf("got %d %q (%v), want a 200 whose JSON is cut and garbled", resp.StatusCode, body, err)
			}
		}},
		{"none", Faults{}, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != 200 || !strings.HasSuffix(string(body), "}") {
				t.Errorf("got %d %q (%v)", resp.StatusCode, body, err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(t, Config{Faults: tc.faults, Limits: unthrottled()})
			resp, err := http.Get(srv.URL + "/api/v1/query?query=1")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			tc.check(t, resp, body, err)
		})
	}
}

// TestFaultSeed: a rate-based fault fires on some requests, the same ones for the
// same seed.
func TestFaultSeed(t *testing.T) {
	pattern := func(seed int64) string {
		srv := newTestServer(t, Config{Faults: Faults{ErrorRate: 0.5, Seed: seed}, Limits: unthrottled()})
		var b strings.Builder
		for range 40 {
			r := call(t, nil, srv.URL, "GET", "/api/v1/query", v("query", "1"))
			fmt.Fprintf(&b, "%d ", r.status/100)
		}
		return b.String()
	}
	a, b, c := pattern(7), pattern(7), pattern(8)
	if a != b {
		t.Errorf("same seed, different faults:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("different seeds gave the same faults: %s", a)
	}
	if n := strings.Count(a, "5"); n == 0 || n == 40 {
		t.Errorf("rate 0.5 gave %d faults in 40 requests", n)
	}
}

// TestFaultLatency: the added latency holds the answer back; a client whose deadline
// is far shorter than the latency gives up first.
func TestFaultLatency(t *testing.T) {
	srv := newTestServer(t, Config{Faults: Faults{Latency: time.Hour}, Limits: unthrottled()})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/query?query=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d despite an hour of injected latency", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the client's deadline", err)
	}
}

func TestConfigErrors(t *testing.T) {
	db := openDB(t)
	cases := []struct {
		name string
		cfg  Config
		db   storage.Queryable
		msg  string
	}{
		{"no storage", Config{}, nil, "no storage"},
		{"error rate above 1", Config{Faults: Faults{ErrorRate: 1.5}}, db, "ErrorRate must be between 0 and 1"},
		{"negative latency", Config{Faults: Faults{Latency: -time.Second}}, db, "must not be negative"},
		{"negative limit", Config{Limits: Limits{QuerySeries: -1}}, db, "series limits must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg, tc.db); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v, want one containing %q", err, tc.msg)
			}
		})
	}
}

// TestScanLimits: CloudWatch caps series and samples scanned per 24 h of data read.
func TestScanLimits(t *testing.T) {
	gauge := `{"http.server.active_requests"}`
	many := `{"many.series"}`
	cases := []struct {
		name   string
		limits Limits
		params url.Values
		path   string
		status int
		msg    string
	}{
		{"series over cap", Limits{SeriesScannedPerDay: 100}, v("query", many), "/api/v1/query", 422, "scans more than 100 series"},
		{"series under cap", Limits{SeriesScannedPerDay: 100}, v("query", gauge), "/api/v1/query", 200, ""},
		{"series cap grows with days read", Limits{SeriesScannedPerDay: 300},
			v("query", many, "start", unix(t0.Add(-36*time.Hour)), "end", unix(t0), "step", "3600"), "/api/v1/query_range", 200, ""},
		{"series cap for one day", Limits{SeriesScannedPerDay: 300},
			v("query", many, "start", unix(t0.Add(-12*time.Hour)), "end", unix(t0), "step", "3600"), "/api/v1/query_range", 422, "scans more than 300 series (300 per 24 h"},
		{"samples over cap", Limits{SamplesScannedPerDay: 100}, v("query", "sum_over_time("+gauge+"[1h])"), "/api/v1/query", 422, "scans more than 100 samples"},
		{"samples under cap", Limits{SamplesScannedPerDay: 100}, v("query", "sum_over_time("+gauge+"[10m])"), "/api/v1/query", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.limits.QueryTPS = -1
			srv := newTestServer(t, Config{Limits: tc.limits})
			r := call(t, nil, srv.URL, "GET", tc.path, tc.params)
			if r.status != tc.status || !strings.Contains(r.env.Error, tc.msg) {
				t.Fatalf("got %d %s, want %d containing %q", r.status, r.raw, tc.status, tc.msg)
			}
			if tc.status == 422 && r.env.ErrorType != "execution" {
				t.Errorf("errorType %q, want execution", r.env.ErrorType)
			}
		})
	}
}
