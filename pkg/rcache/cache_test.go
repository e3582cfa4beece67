package rcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// world is a fake CloudWatch for range queries: series whose samples arrive late (up to
// maxDelay after their timestamp), so what a fetch sees depends on when it is made.
type world struct {
	mu       sync.Mutex
	now      time.Time
	seed     uint64
	series   int
	maxDelay time.Duration
	calls    [][2]time.Time
	label    string // distinguishes data sources
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

// delay is how late sample (series i, time t) arrives; a pure function of both.
func (w *world) delay(i int, t int64) time.Duration {
	h := rand.New(rand.NewPCG(w.seed^uint64(i), uint64(t)))
	if h.IntN(3) > 0 {
		return time.Duration(h.IntN(30)) * time.Second
	}
	return time.Duration(h.Int64N(int64(w.maxDelay)))
}

func (w *world) fetch(expr string, step time.Duration) Fetch {
	return bodyFetch(func(_ context.Context, start, end time.Time) ([]byte, error) {
		w.mu.Lock()
		now := w.now
		w.calls = append(w.calls, [2]time.Time{start, end})
		w.mu.Unlock()
		return w.answer(expr, start, end, step, now), nil
	})
}

// answer is what an uncached query sees at now: series in label order, each sample
// present once it has arrived.
func (w *world) answer(expr string, start, end time.Time, step time.Duration, now time.Time) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	first := true
	for i := range w.series {
		var vals []string
		for t := start; !t.After(end); t = t.Add(step) {
			if t.Add(w.delay(i, t.UnixMilli())).After(now) {
				continue
			}
			vals = append(vals, fmt.Sprintf(`[%s,"%d"]`, fmtTime(t), (t.Unix()/60)*int64(i+1)%997))
		}
		if len(vals) == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, `{"metric":{"__name__":"m","ds":%q,"expr":%q,"instance":"i-%03d"},"values":[%s]}`, w.label, expr, i, strings.Join(vals, ","))
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

func fmtTime(t time.Time) string {
	return fmt.Sprintf("%g", float64(t.UnixMilli())/1000)
}

// rendered is a body's or a decoded answer's content as text, every sample exact (floats
// in their shortest round-trip form), so a cached answer compares equal to a fetched one
// only when it holds the same series, labels, samples and notices.
func rendered[T []byte | *promclient.Answer](t *testing.T, answer T) string {
	t.Helper()
	a, ok := any(answer).(*promclient.Answer)
	if !ok {
		a = decoded(t, any(answer).([]byte))
	}
	return fmt.Sprintf("%+v", *a)
}

var base = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func align(t time.Time, step time.Duration) time.Time { return t.Truncate(step) }

// TestAnswersIdenticalToUncached: random dashboards' sequences of refreshes, zooms and
// range shifts (fixed seeds), with late-arriving samples; every cached answer holds exactly
// what an uncached query made at the same moment holds. (The fresh period is
// off: within it the cache knowingly serves an answer up to that old.) With two replicas
// sharing a store, each request goes to either: what one reads of the other's holds too.
func TestAnswersIdenticalToUncached(t *testing.T) {
	withReplicas(t, testAnswersIdenticalToUncached)
}

func testAnswersIdenticalToUncached(t *testing.T, newCaches func(Options) []*Cache) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			w := &world{now: base, seed: seed, series: 1 + rng.IntN(6), maxDelay: 8 * time.Minute}
			cs := newCaches(Options{Now: w.clock, RefetchWindow: 10 * time.Minute, Fresh: -1})
			pick := rand.New(rand.NewPCG(seed, 3)) // the replica asked; apart from rng, so one cache sees the same requests
			steps := []time.Duration{15 * time.Second, time.Minute, 5 * time.Minute}
			step := steps[rng.IntN(len(steps))]
			span := time.Duration(30+rng.IntN(360)) * time.Minute
			var fetched, total int64
			for i := range 40 {
				switch r := rng.IntN(10); {
				case r < 6: // refresh: time moves on
					w.advance(time.Duration(5+rng.IntN(120)) * time.Second)
				case r < 8: // zoom
					span = time.Duration(float64(span) * (0.5 + rng.Float64()*1.5))
					span = max(span, 10*step)
				default: // look back
					w.advance(time.Duration(rng.IntN(3)) * time.Second)
				}
				end := align(w.clock().Add(-time.Duration(rng.IntN(3))*time.Duration(i%4)*step), step)
				start := align(end.Add(-span), step)
				body, res, err := cs[pick.IntN(len(cs))].QueryRange(context.Background(), Key{DataSource: "a", Expr: "m", Step: step}, start, end, w.fetch("m", step))
				if err != nil || res.StoreErr != nil {
					t.Fatal(err, res.StoreErr)
				}
				want := w.answer("m", start, end, step, w.clock())
				if got, exp := rendered(t, body), rendered(t, want); got != exp {
					t.Fatalf("request %d (%s..%s step %s, %s): answers differ\n got %.3000s\nwant %.3000s", i, start.Format(time.TimeOnly), end.Format(time.TimeOnly), step, res.Describe(), got, exp)
				}
				fetched += res.Points
				total += int64(bytes.Count(want, []byte("],[")) + 1)
			}
			if fetched >= total {
				t.Errorf("fetched %d points for %d served: the cache saved nothing", fetched, total)
			}
		})
	}
}

// TestRefreshFetchesTailAndRefetchWindow: a refresh asks only for the new tail plus the
// part still inside the re-fetch window; a zoom in asks for nothing; a zoom out for the
// missing head (and the stale tail).
func TestRefreshFetchesTailAndRefetchWindow(t *testing.T) {
	w := &world{now: base, seed: 1, series: 2, maxDelay: time.Minute}
	step := time.Minute
	c := New(Options{Now: w.clock, RefetchWindow: 10 * time.Minute, Fresh: 10 * time.Second})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	get := func(start, end time.Time) Result {
		t.Helper()
		_, res, err := c.QueryRange(context.Background(), k, start, end, w.fetch("m", step))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	end := base
	start := end.Add(-6 * time.Hour)
	if res := get(start, end); res.Outcome != Miss || len(w.calls) != 1 {
		t.Fatalf("cold: %+v, calls %v", res, w.calls)
	}
	w.advance(time.Minute)
	w.calls = nil
	res := get(start.Add(time.Minute), end.Add(time.Minute))
	wantFrom := end.Add(-10 * time.Minute).Add(step) // first grid point past the trusted part
	if res.Outcome != Partial || len(w.calls) != 1 || !w.calls[0][0].Equal(wantFrom) || !w.calls[0][1].Equal(end.Add(time.Minute)) {
		t.Errorf("refresh: %+v, calls %v, want one call %s..%s", res, w.calls, wantFrom, end.Add(time.Minute))
	}
	w.calls = nil
	if res := get(start.Add(time.Hour), end.Add(-time.Hour)); res.Outcome != Hit || len(w.calls) != 0 {
		t.Errorf("zoom in within the fresh period: %+v, calls %v", res, w.calls)
	}
	w.advance(time.Minute)
	w.calls = nil
	res = get(start.Add(-time.Hour), end.Add(time.Minute))
	if res.Outcome != Partial || len(w.calls) != 2 || !w.calls[0][0].Equal(start.Add(-time.Hour)) || !w.calls[0][1].Equal(start.Add(-step)) {
		t.Errorf("zoom out: %+v, calls %v, want the head then the tail", res, w.calls)
	}
}

// TestLateDataAppearsOnRefresh: a sample missing at the first fetch (not yet arrived)
// is there after a refresh, because its time was inside the re-fetch window.
func TestLateDataAppearsOnRefresh(t *testing.T) {
	w := &world{now: base, seed: 3, series: 3, maxDelay: 8 * time.Minute}
	step := time.Minute
	c := New(Options{Now: w.clock, RefetchWindow: 10 * time.Minute, Fresh: time.Second})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	start, end := base.Add(-time.Hour), base
	first, _, _ := c.QueryRange(context.Background(), k, start, end, w.fetch("m", step))
	w.advance(9 * time.Minute)
	second, _, _ := c.QueryRange(context.Background(), k, start, end, w.fetch("m", step))
	// first is read after the second request: an answer given is never changed by a merge.
	n1, n2 := first.Points(), second.Points()
	if n2 <= n1 {
		t.Fatalf("no late samples appeared: %d then %d points", n1, n2)
	}
	if want := w.answer("m", start, end, step, w.clock()); rendered(t, second) != rendered(t, want) {
		t.Error("after the late samples arrived the cached answer differs from an uncached one")
	}
}

// TestIdenticalRequestsInFlightCoalesce: many panels or viewers asking the same thing at
// once cost one upstream call.
func TestIdenticalRequestsInFlightCoalesce(t *testing.T) {
	w := &world{now: base, seed: 1, series: 2, maxDelay: time.Minute}
	step := time.Minute
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: w.clock})
	release := make(chan struct{})
	var calls atomic.Int32
	inner := w.fetch("m", step)
	fetch := func(ctx context.Context, s, e time.Time) (*promclient.Answer, error) {
		calls.Add(1)
		<-release
		return inner(ctx, s, e)
	}
	var wg sync.WaitGroup
	bodies := make([]*promclient.Answer, 20)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _, err := c.QueryRange(context.Background(), Key{DataSource: "a", Expr: "m", Step: step}, base.Add(-time.Hour), base, fetch)
			if err != nil {
				t.Error(err)
			}
			bodies[i] = b
		}()
	}
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d upstream calls for 20 identical requests, want 1", n)
	}
	// The request that fetched has the answer as it came; the others the one assembled
	// from the extent: the same content.
	for i, b := range bodies {
		if rendered(t, b) != rendered(t, bodies[0]) {
			t.Errorf("request %d got a different answer", i)
		}
	}
	st := c.Stats()
	if st.Misses != 1 || st.Hits != 19 {
		t.Errorf("stats %+v, want 1 miss and 19 hits", st)
	}
}

// TestDataSourcesAreIsolated: the same expression on two data sources never shares data.
func TestDataSourcesAreIsolated(t *testing.T) {
	a := &world{now: base, seed: 1, series: 2, maxDelay: time.Minute, label: "a"}
	b := &world{now: base, seed: 1, series: 2, maxDelay: time.Minute, label: "b"}
	step := time.Minute
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: a.clock})
	start, end := base.Add(-time.Hour), base
	ga, _, _ := c.QueryRange(context.Background(), Key{DataSource: "uid-a", Expr: "m", Step: step}, start, end, a.fetch("m", step))
	gb, res, _ := c.QueryRange(context.Background(), Key{DataSource: "uid-b", Expr: "m", Step: step}, start, end, b.fetch("m", step))
	if res.Outcome != Miss || len(b.calls) != 1 {
		t.Errorf("second data source: %+v, %d calls; want its own miss", res, len(b.calls))
	}
	if dataSources(ga) != "a" || dataSources(gb) != "b" {
		t.Error("one data source's series reached the other")
	}
	if _, _, err := c.Lookup(context.Background(), "uid-a", "labels", 0, func(context.Context) ([]byte, error) { return []byte("A"), nil }); err != nil {
		t.Fatal(err)
	}
	got, out, _ := c.Lookup(context.Background(), "uid-b", "labels", 0, func(context.Context) ([]byte, error) { return []byte("B"), nil })
	if string(got) != "B" || out != Miss {
		t.Errorf("lookup on the second data source: %q %s", got, out)
	}
}

// dataSources is the distinct ds labels of the answer's series.
func dataSources(a *promclient.Answer) string {
	var ds []string
	for _, s := range a.Series {
		if !slices.Contains(ds, s.Labels["ds"]) {
			ds = append(ds, s.Labels["ds"])
		}
	}
	return strings.Join(ds, ",")
}

// TestEvictionKeepsTheCacheWithinItsBytes: many distinct queries under a small limit
// evict the least recently used; the most recent stays.
func TestEvictionKeepsTheCacheWithinItsBytes(t *testing.T) {
	w := &world{now: base, seed: 1, series: 5, maxDelay: time.Minute}
	step := time.Minute
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: w.clock, MaxBytes: 200 << 10})
	start, end := base.Add(-6*time.Hour), base
	var maxBytes int64
	for i := range 30 {
		expr := fmt.Sprintf("m%d", i)
		if _, _, err := c.QueryRange(context.Background(), Key{DataSource: "a", Expr: expr, Step: step}, start, end, w.fetch(expr, step)); err != nil {
			t.Fatal(err)
		}
		maxBytes = max(maxBytes, c.Stats().Bytes)
	}
	st := c.Stats()
	if st.Evictions == 0 || maxBytes > 200<<10 {
		t.Errorf("stats %+v, peak bytes %d: want evictions and at most %d bytes", st, maxBytes, 200<<10)
	}
	_, res, _ := c.QueryRange(context.Background(), Key{DataSource: "a", Expr: "m29", Step: step}, start, end, w.fetch("m29", step))
	if res.Outcome != Hit {
		t.Errorf("the most recent query was evicted: %+v", res)
	}
	_, res, _ = c.QueryRange(context.Background(), Key{DataSource: "a", Expr: "m0", Step: step}, start, end, w.fetch("m0", step))
	if res.Outcome != Miss {
		t.Errorf("the oldest query was not evicted: %+v", res)
	}
}

// TestNotCacheable: answers relative to the query range, non-matrix answers and errors
// are passed through and never kept.
func TestNotCacheable(t *testing.T) {
	w := &world{now: base, seed: 1, series: 1, maxDelay: time.Minute}
	step := time.Minute
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: w.clock})
	for range 2 {
		if _, res, _ := c.QueryRange(context.Background(), Key{DataSource: "a", Expr: "m @ end()", Step: step}, base.Add(-time.Hour), base, w.fetch("m", step)); res.Outcome != Bypass {
			t.Errorf("@ end(): %s", res.Outcome)
		}
	}
	errBody := []byte(`{"status":"error","errorType":"execution","error":"boom"}`)
	calls := 0
	for i := range 2 {
		_, _, err := c.QueryRange(context.Background(), Key{DataSource: "a", Expr: "x", Step: step}, base.Add(-time.Hour), base,
			bodyFetch(func(context.Context, time.Time, time.Time) ([]byte, error) { calls++; return errBody, nil }))
		var apiErr *promclient.APIError
		if !errors.As(err, &apiErr) || apiErr.Type != "execution" || calls != i+1 {
			t.Errorf("error envelope, request %d: %v after %d calls; want the execution error, not kept", i, err, calls)
		}
	}
	boom := errors.New("upstream down")
	if _, _, err := c.QueryRange(context.Background(), Key{DataSource: "a", Expr: "y", Step: step}, base.Add(-time.Hour), base,
		bodyFetch(func(context.Context, time.Time, time.Time) ([]byte, error) { return nil, boom })); !errors.Is(err, boom) {
		t.Errorf("err %v", err)
	}
}

func TestLookupTTL(t *testing.T) {
	w := &world{now: base}
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: w.clock})
	n := 0
	fetch := func(context.Context) ([]byte, error) { n++; return []byte(fmt.Sprint(n)), nil }
	c.Lookup(context.Background(), "a", "label/job/values", 30*time.Second, fetch)
	w.advance(29 * time.Second)
	if got, out, _ := c.Lookup(context.Background(), "a", "label/job/values", 30*time.Second, fetch); string(got) != "1" || out != Hit {
		t.Errorf("within ttl: %s %s", got, out)
	}
	w.advance(2 * time.Second)
	if got, out, _ := c.Lookup(context.Background(), "a", "label/job/values", 30*time.Second, fetch); string(got) != "2" || out != Miss {
		t.Errorf("after ttl: %s %s", got, out)
	}
	fail := func(context.Context) ([]byte, error) { return nil, errors.New("x") }
	w.advance(time.Hour)
	if _, _, err := c.Lookup(context.Background(), "a", "label/job/values", 0, fail); err == nil {
		t.Error("a failed lookup was served")
	}
	if got, _, _ := c.Lookup(context.Background(), "a", "label/job/values", 0, fetch); string(got) != "3" {
		t.Errorf("a failure was cached: %s", got)
	}
}

// TestFreshPeriod: within the fresh period a refresh is served as cached (at most that
// stale) without an upstream call, for range and instant queries; after it, the tail is
// fetched again. A negative period turns this off.
func TestFreshPeriod(t *testing.T) {
	w := &world{now: base, seed: 1, series: 2, maxDelay: time.Minute}
	step := 15 * time.Second
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: w.clock, Fresh: 90 * time.Second})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	get := func() Result {
		t.Helper()
		end := align(w.clock(), step)
		_, res, err := c.QueryRange(context.Background(), k, end.Add(-time.Hour), end, w.fetch("m", step))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	n := 0
	instant := func() Outcome {
		_, out, _ := c.Instant(context.Background(), "a", "m", w.clock(), step, func(context.Context) (*promclient.Answer, error) { n++; return scalarAnswer(float64(n)), nil })
		return out
	}
	if get().Outcome != Miss || instant() != Miss {
		t.Fatal("cold load was not a miss")
	}
	w.advance(30 * time.Second)
	if r, o := get(), instant(); r.Outcome != Hit || o != Hit {
		t.Errorf("refresh at +30s: %s / %s, want hits", r.Outcome, o)
	}
	w.advance(60 * time.Second)
	if r, o := get(), instant(); r.Outcome != Partial || o != Miss {
		t.Errorf("refresh at +90s: %s / %s, want a partial fetch and a miss", r.Outcome, o)
	}
	off := New(Options{RefetchWindow: DefaultRefetchWindow, Now: w.clock, Fresh: -1})
	for range 2 {
		if _, out, _ := off.Instant(context.Background(), "a", "m", w.clock(), step, func(context.Context) (*promclient.Answer, error) { return scalarAnswer(0), nil }); out != Bypass {
			t.Errorf("fresh period off: instant %s", out)
		}
	}
}

// TestOneStepRule walks the default rule on a 1-minute grid: within the minute of the
// fetch and the next one a refresh is served without a call (at +60 s lacking only the
// request's newest point); once the second boundary has passed, one call fetches the new
// points with the re-fetch window, and late data and the new steps appear: the answer is
// then an uncached one. Instant answers follow the same grid.
func TestOneStepRule(t *testing.T) {
	step := time.Minute
	w := &world{now: base.Add(20 * time.Second), seed: 5, series: 3, maxDelay: 4 * time.Minute}
	c := New(Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	n := 0
	instant := func() Outcome {
		_, out, _ := c.Instant(context.Background(), "a", "m", w.clock(), step, func(context.Context) (*promclient.Answer, error) { n++; return scalarAnswer(float64(n)), nil })
		return out
	}
	cold := w.clock()
	for _, tc := range []struct {
		at       time.Duration // after the cold load
		calls    int
		outcome  Outcome
		instant  Outcome
		asOf     time.Duration // the answer equals an uncached one made then
		lastStep bool          // the request's newest point is left out
	}{
		{0, 1, Miss, Miss, 0, false},
		{30 * time.Second, 0, Hit, Hit, 0, false},
		{60 * time.Second, 0, Hit, Hit, 0, true},
		{99 * time.Second, 0, Hit, Hit, 0, true},                        // 1:59 after base: still one boundary
		{100 * time.Second, 1, Partial, Miss, 100 * time.Second, false}, // 2:00: the second
		{160 * time.Second, 0, Hit, Hit, 100 * time.Second, true},
	} {
		w.mu.Lock()
		w.now, w.calls = cold.Add(tc.at), nil
		w.mu.Unlock()
		end := align(w.clock(), step)
		start := end.Add(-time.Hour)
		body, res, err := c.QueryRange(context.Background(), k, start, end, w.fetch("m", step))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != tc.outcome || len(w.calls) != tc.calls || !res.AsOf.Equal(cold.Add(tc.asOf)) {
			t.Errorf("+%s: %s, %d calls, as of %s; want %s, %d calls, as of +%s", tc.at, res.Outcome, len(w.calls), res.AsOf.Sub(cold), tc.outcome, tc.calls, tc.asOf)
		}
		if out := instant(); out != tc.instant {
			t.Errorf("+%s: instant %s, want %s", tc.at, out, tc.instant)
		}
		servedEnd := end
		if tc.lastStep {
			servedEnd = end.Add(-step)
		}
		want := w.answer("m", start, servedEnd, step, cold.Add(tc.asOf))
		if rendered(t, body) != rendered(t, want) {
			t.Errorf("+%s: the answer is not the uncached one of %s..%s made at +%s", tc.at, start.Format(time.TimeOnly), servedEnd.Format(time.TimeOnly), tc.asOf)
		}
	}
	// The bound passed: what arrived since the cold load (new steps, late samples) is there.
	if got, first := rendered(t, w.answer("m", base.Add(-58*time.Minute), base.Add(2*time.Minute), step, cold.Add(100*time.Second))),
		rendered(t, w.answer("m", base.Add(-58*time.Minute), base.Add(2*time.Minute), step, cold)); got == first {
		t.Fatal("the world had no new data after the cold load: the test proves nothing")
	}
}

// TestAnswersWithinOneStepOfUncached: random refreshes, zooms and range shifts (fixed
// seeds) with late samples under the default rule. Every answer is exactly an uncached
// one made when its newest part was fetched (Result.AsOf), for the request's range or for
// that range less its newest point, and AsOf is never more than one step boundary back.
// With two replicas sharing a store, each request goes to either.
func TestAnswersWithinOneStepOfUncached(t *testing.T) {
	withReplicas(t, testAnswersWithinOneStepOfUncached)
}

func testAnswersWithinOneStepOfUncached(t *testing.T, newCaches func(Options) []*Cache) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			w := &world{now: base, seed: seed, series: 1 + rng.IntN(6), maxDelay: 8 * time.Minute}
			cs := newCaches(Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
			pick := rand.New(rand.NewPCG(seed, 3))
			steps := []time.Duration{15 * time.Second, time.Minute, 5 * time.Minute}
			step := steps[rng.IntN(len(steps))]
			// Spans longer than the latest sample's delay: a zoom out's head is final.
			span := time.Duration(30+rng.IntN(360)) * time.Minute
			var hits int
			for i := range 40 {
				switch r := rng.IntN(10); {
				case r < 6:
					w.advance(time.Duration(5+rng.IntN(120)) * time.Second)
				case r < 8:
					span = max(time.Duration(float64(span)*(0.5+rng.Float64()*1.5)), 15*time.Minute, 10*step)
				default:
					w.advance(time.Duration(rng.IntN(3)) * time.Second)
				}
				now := w.clock()
				end := align(now.Add(-time.Duration(rng.IntN(4)/2)*step), step) // now and then a past end
				start := align(end.Add(-span), step)
				body, res, err := cs[pick.IntN(len(cs))].QueryRange(context.Background(), Key{DataSource: "a", Expr: "m", Step: step}, start, end, w.fetch("m", step))
				if err != nil || res.StoreErr != nil {
					t.Fatal(err, res.StoreErr)
				}
				if res.Outcome == Hit || res.Outcome == SharedHit {
					hits++
				}
				if back := align(now, step).Sub(align(res.AsOf, step)); back > step {
					t.Fatalf("request %d: served as of %s, %s of grid before now %s", i, res.AsOf.Format(time.TimeOnly), back, now.Format(time.TimeOnly))
				}
				got := rendered(t, body)
				full := rendered(t, w.answer("m", start, end, step, res.AsOf))
				short := rendered(t, w.answer("m", start, end.Add(-step), step, res.AsOf))
				if got != full && got != short {
					t.Fatalf("request %d (%s..%s step %s, %s): not an uncached answer as of %s\n got %.2000s\nwant %.2000s", i, start.Format(time.TimeOnly), end.Format(time.TimeOnly), step, res.Describe(), res.AsOf.Format(time.TimeOnly), got, full)
				}
			}
			if hits == 0 {
				t.Error("no request was served from the cache alone: the rule was never exercised")
			}
		})
	}
}

// TestFreshnessAnchoredToTheDataStep: a request made just before a minute boundary and
// fetched just after it (a slow cold load) keeps its freshness for the step its data end
// at, so the refreshes within the next minute are served (lacking only their newest
// point), while an extent ending two steps before its fetch (a past range) serves only
// what it holds.
func TestFreshnessAnchoredToTheDataStep(t *testing.T) {
	step := time.Minute
	for _, tc := range []struct {
		name     string
		behind   int           // steps the cold request's end lies before the fetch's minute
		at       time.Duration // the refresh, after the fetch at 1:00:10
		outcome  Outcome
		lastStep bool // served lacking the request's newest point
	}{
		{"late fetch, +30s", 1, 30 * time.Second, Hit, true},
		{"late fetch, +49s", 1, 49 * time.Second, Hit, true},
		{"late fetch, next minute", 1, 50 * time.Second, Partial, false},
		{"past range, same minute", 2, 30 * time.Second, Partial, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fetchAt := base.Add(time.Hour + 10*time.Second) // 7:00:10
			w := &world{now: fetchAt, seed: 9, series: 3, maxDelay: 3 * time.Minute}
			c := New(Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
			k := Key{DataSource: "a", Expr: "m", Step: step}
			coldEnd := align(fetchAt, step).Add(-time.Duration(tc.behind) * step)
			if _, res, err := c.QueryRange(context.Background(), k, coldEnd.Add(-time.Hour), coldEnd, w.fetch("m", step)); err != nil || res.Outcome != Miss {
				t.Fatalf("cold: %v %v", res.Outcome, err)
			}
			w.advance(tc.at)
			end := align(w.clock(), step)
			start := end.Add(-time.Hour)
			body, res, err := c.QueryRange(context.Background(), k, start, end, w.fetch("m", step))
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.outcome {
				t.Fatalf("refresh: %s, want %s", res.Outcome, tc.outcome)
			}
			servedEnd := end
			if tc.lastStep {
				servedEnd = end.Add(-step)
			}
			if rendered(t, body) != rendered(t, w.answer("m", start, servedEnd, step, res.AsOf)) {
				t.Errorf("the answer is not the uncached one of %s..%s made at %s", start.Format(time.TimeOnly), servedEnd.Format(time.TimeOnly), res.AsOf.Format(time.TimeOnly))
			}
		})
	}
}

// TestKeptFailures: a failure KeepFailure picks is given again without a call while an
// answer fetched then would be served (the same panel refreshed, also a minute later), and
// asked again for a narrower range or once the bound has passed; other failures, and any
// with the fresh period off, are asked again every time.
func TestKeptFailures(t *testing.T) {
	errOver, errOther := errors.New("over the execution limit"), errors.New("throttled")
	step := time.Minute
	for _, tc := range []struct {
		name  string
		err   error
		fresh time.Duration
		want  []int // upstream calls after each request
	}{
		{"over limit", errOver, 0, []int{1, 1, 1, 2, 2, 3}},
		{"transient", errOther, 0, []int{1, 2, 3, 4, 5, 6}},
		{"fresh period off", errOver, -1, []int{1, 2, 3, 4, 5, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{now: base.Add(20 * time.Second), seed: 3, series: 2, maxDelay: time.Minute}
			c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: w.clock, Fresh: tc.fresh, KeepFailure: func(err error) bool { return errors.Is(err, errOver) }})
			k := Key{DataSource: "a", Expr: "m", Step: step}
			calls := 0
			fail := bodyFetch(func(context.Context, time.Time, time.Time) ([]byte, error) { calls++; return nil, tc.err })
			cold := w.clock()
			for i, r := range []struct {
				at   time.Duration
				span time.Duration
			}{
				{0, time.Hour},                  // fails
				{30 * time.Second, time.Hour},   // the same request
				{60 * time.Second, time.Hour},   // refreshed a minute later: one step on
				{70 * time.Second, time.Minute}, // a zoom in: asked
				{100 * time.Second, time.Hour},  // the second boundary: asked
			} {
				w.mu.Lock()
				w.now = cold.Add(r.at)
				w.mu.Unlock()
				end := align(w.clock(), step)
				_, _, err := c.QueryRange(context.Background(), k, end.Add(-r.span), end, fail)
				if !errors.Is(err, tc.err) {
					t.Fatalf("request %d: %v, want the failure", i, err)
				}
				var kept *RecentFailure
				if reused := errors.As(err, &kept); reused != (calls == tc.want[max(i-1, 0)] && i > 0) {
					t.Errorf("request %d: given again %v, but %d calls", i, reused, calls)
				}
				if calls != tc.want[i] {
					t.Errorf("request %d: %d calls, want %d", i, calls, tc.want[i])
				}
			}
			// Once a fetch succeeds the failure is gone.
			w.advance(2 * time.Minute)
			end := align(w.clock(), step)
			if _, res, err := c.QueryRange(context.Background(), k, end.Add(-time.Hour), end, w.fetch("m", step)); err != nil || res.Fetches != 1 {
				t.Fatalf("after the bound: %v, %d fetches", err, res.Fetches)
			}
			if _, res, err := c.QueryRange(context.Background(), k, end.Add(-time.Hour), end, fail); tc.fresh == 0 && (err != nil || res.Outcome != Hit) {
				t.Errorf("after a success: %v, %s", err, res.Outcome)
			}
		})
	}
}

// TestKeptInstantFailures: an instant query's kept failure follows the instant answers'
// rule (the publish-period grid); a success ends it.
func TestKeptInstantFailures(t *testing.T) {
	errOver := errors.New("over the execution limit")
	now := base.Add(20 * time.Second)
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: func() time.Time { return now }, KeepFailure: func(err error) bool { return errors.Is(err, errOver) }})
	calls, fail := 0, true
	for i, tc := range []struct {
		at    time.Duration
		calls int
		err   bool
	}{{0, 1, true}, {30 * time.Second, 1, true}, {60 * time.Second, 1, true}, {100 * time.Second, 2, true}, {220 * time.Second, 3, false}, {230 * time.Second, 3, false}} {
		now = base.Add(20*time.Second + tc.at)
		fail = tc.calls < 3
		_, _, err := c.Instant(context.Background(), "a", "m", now, time.Minute, func(context.Context) (*promclient.Answer, error) {
			calls++
			if fail {
				return nil, errOver
			}
			return scalarAnswer(1), nil
		})
		if calls != tc.calls || (err != nil) != tc.err || (err != nil && !errors.Is(err, errOver)) {
			t.Errorf("request %d at +%s: %d calls, %v; want %d calls, error %v", i, tc.at, calls, err, tc.calls, tc.err)
		}
	}
}

// bodyFetch adapts an upstream that gives a whole body to Fetch: promclient reads it.
func bodyFetch(f func(ctx context.Context, s, e time.Time) ([]byte, error)) Fetch {
	return func(ctx context.Context, s, e time.Time) (*promclient.Answer, error) {
		b, err := f(ctx, s, e)
		if err != nil {
			return nil, err
		}
		return promclient.ReadAnswer(bytes.NewReader(b), 0)
	}
}

func decoded(t *testing.T, body []byte) *promclient.Answer {
	t.Helper()
	a, err := promclient.ReadAnswer(bytes.NewReader(body), 0)
	if err != nil {
		t.Fatalf("read: %v\n%.2000s", err, body)
	}
	return a
}

// scalarAnswer is an instant answer of one number.
func scalarAnswer(v float64) *promclient.Answer {
	return &promclient.Answer{Type: "scalar", Series: []promclient.Series{{T: []int64{0}, V: []float64{v}}}}
}

// TestNonMatrixIsHandedOverAsFetched: an answer the extent cannot keep is the answer
// given, from one call, and is not kept.
func TestNonMatrixIsHandedOverAsFetched(t *testing.T) {
	step := time.Minute
	now := time.Unix(1700000000+3600, 0)
	c := New(Options{RefetchWindow: DefaultRefetchWindow, Now: func() time.Time { return now }})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	start, end := time.Unix(1700000000, 0), time.Unix(1700000000+9*60, 0)
	vector := &promclient.Answer{Type: "vector", Series: []promclient.Series{{T: []int64{1}, V: []float64{2}}}}
	calls := 0
	for i := range 2 {
		got, res, err := c.QueryRange(context.Background(), k, start, end, func(context.Context, time.Time, time.Time) (*promclient.Answer, error) {
			calls++
			return vector, nil
		})
		if err != nil || got != vector || res.Outcome != Bypass || calls != i+1 {
			t.Errorf("request %d: %v, %s after %d calls; want the vector as fetched, bypassed", i, err, res.Outcome, calls)
		}
	}
}

// --- exactness: answers assembled from an extent equal the fetched answers ---

func randValueText(rng *rand.Rand) string {
	switch rng.IntN(14) {
	case 0:
		return []string{"NaN", "+Inf", "-Inf", "Inf", "inf", "-inf", "nan", "Infinity", "-0", "0", "+0", "-0.0"}[rng.IntN(12)]
	case 1: // any bit pattern, incl. subnormals, NaN payloads, huge
		f := math.Float64frombits(rng.Uint64())
		return strconv.FormatFloat(f, []byte("gef")[rng.IntN(3)], -1, 64)
	case 2: // subnormal
		f := math.Float64frombits(rng.Uint64N(1 << 52))
		return strconv.FormatFloat(f, 'e', -1, 64)
	case 3: // near max
		return strconv.FormatFloat(math.MaxFloat64*(0.5+rng.Float64()/2), 'g', -1, 64)
	case 4: // more digits than needed
		return strconv.FormatFloat(rng.NormFloat64()*1e6, 'f', 25, 64)
	case 5: // exponent forms
		return fmt.Sprintf("%dE%d", rng.IntN(1000)-500, rng.IntN(600)-300)
	case 6: // hex float (strconv accepts)
		return strconv.FormatFloat(rng.NormFloat64(), 'x', -1, 64)
	case 7:
		return "5e-324"
	case 8:
		return "4.9406564584124654e-324"
	case 9: // halfway-ish long decimal
		return "0.1000000000000000055511151231257827021181583404541015625"
	default:
		return strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)), 'g', -1, 64)
	}
}

func randTimeText(rng *rand.Rand, ms int64) string {
	secs := float64(ms) / 1000
	switch rng.IntN(6) {
	case 0:
		return strconv.FormatFloat(secs, 'e', -1, 64)
	case 1: // sub-millisecond noise, rounded by both readers
		return strconv.FormatFloat(secs+(rng.Float64()-0.5)*0.00099, 'f', -1, 64)
	case 2:
		return strconv.FormatFloat(secs, 'f', 6, 64)
	}
	return strconv.FormatFloat(secs, 'f', -1, 64)
}

func randHist(rng *rand.Rand) string {
	n := rng.IntN(4)
	var bs []string
	for range n {
		lo := rng.Float64() * 10
		bs = append(bs, fmt.Sprintf(`[%d,"%s","%s","%s"]`, rng.IntN(4), strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(lo+rng.Float64(), 'g', -1, 64), randValueText(rng)))
	}
	return fmt.Sprintf(`{ "count" : "%d", "sum": "%s", "buckets": [%s]}`, rng.IntN(100), randValueText(rng), strings.Join(bs, ", "))
}

// randAnswer is a Prometheus-like answer: series sorted by labels, samples in time order.
func randAnswer(rng *rand.Rand, from, step int64, n int) []byte {
	type ser struct {
		labels map[string]string
		sorted []string
	}
	var ss []ser
	seen := map[string]bool{}
	for range 1 + rng.IntN(6) {
		l := map[string]string{}
		if rng.IntN(4) > 0 {
			l["__name__"] = []string{"m", "up", "a_b"}[rng.IntN(3)]
		}
		for range rng.IntN(3) {
			l[[]string{"job", "i", "zone", "é", "a\"b"}[rng.IntN(5)]] = []string{"x", "y", "", "ü\n", "1"}[rng.IntN(5)]
		}
		s := ser{labels: l, sorted: newSeries(promclient.Series{Labels: l}).pairs}
		if seen[strings.Join(s.sorted, "\xff")] {
			continue
		}
		seen[strings.Join(s.sorted, "\xff")] = true
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(a, b ser) int { return compareLabels(a.sorted, b.sorted) })
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	first := true
	for _, s := range ss {
		var vals, hists []string
		kind := rng.IntN(4) // 0,1: values; 2: histograms; 3: both
		for i := range n {
			if rng.IntN(5) == 0 {
				continue
			}
			ms := from + int64(i)*step
			if kind != 2 && (kind != 3 || rng.IntN(2) == 0) {
				vals = append(vals, fmt.Sprintf(`[%s,"%s"]`, randTimeText(rng, ms), randValueText(rng)))
			} else if kind >= 2 {
				hists = append(hists, fmt.Sprintf(`[%s,%s]`, randTimeText(rng, ms), randHist(rng)))
			}
		}
		if len(vals) == 0 && len(hists) == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		metric := new(bytes.Buffer)
		metric.WriteString("{")
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for i, k := range keys {
			if i > 0 {
				metric.WriteString(", ")
			}
			fmt.Fprintf(metric, "%q : %q", k, s.labels[k])
		}
		metric.WriteString("}")
		fmt.Fprintf(&b, `{"metric":%s`, metric)
		if len(vals) > 0 {
			fmt.Fprintf(&b, `,"values":[%s]`, strings.Join(vals, ","))
		}
		if len(hists) > 0 {
			fmt.Fprintf(&b, `,"histograms":[%s]`, strings.Join(hists, ","))
		}
		b.WriteString("}")
	}
	b.WriteString(`]}`)
	if rng.IntN(2) == 0 {
		b.WriteString(`,"warnings":["w1","w2 \"q\""]`)
	}
	if rng.IntN(2) == 0 {
		b.WriteString(`,"infos":["i1"]`)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// TestExtentRoundTrips: random answers (fixed seeds) kept as QueryRange keeps them
// (merged into an extent in two parts, the second fetched again as a re-fetch window
// would, then assembled for the range) equal the fetched answers themselves, every
// value exact.
func TestExtentRoundTrips(t *testing.T) {
	step := int64(60000)
	from := int64(1700000000000)
	for seed := uint64(1); seed <= 800; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		n := 1 + rng.IntN(30)
		to := from + int64(n-1)*step
		body := randAnswer(rng, from, step, n)
		fetched := decoded(t, body)
		mid := from + int64(rng.IntN(n))*step
		e := &entry{}
		e.reset()
		e.merge(part(fetched, from, mid), from, mid)
		e.merge(part(fetched, mid+step, to), mid+step, to)
		e.merge(part(fetched, mid, to), mid, to)
		got := e.answer(from, to)
		if g, w := rendered(t, got), rendered(t, fetched); g != w {
			t.Fatalf("seed %d: answers differ\nbody %s\n got %.3000s\nwant %.3000s", seed, body, g, w)
		}
	}
}

// part is what a fetch of [from, to] would have given: a's samples there, series without
// any left out.
func part(a *promclient.Answer, from, to int64) *promclient.Answer {
	p := &promclient.Answer{Type: a.Type, Warnings: a.Warnings, Infos: a.Infos}
	for _, s := range a.Series {
		if in := within(s, from, to); len(in.T) > 0 || len(in.Histograms) > 0 {
			p.Series = append(p.Series, in)
		}
	}
	return p
}

// TestSparseSeriesKeptAllocation: a wide answer of sparse series (here 2,000 series of
// 3 points), decoded and kept in an extent, allocates in proportion to its body, not room
// per series for the whole range asked (a 7-day, 1-minute range reserved 330 MB when each
// series got that room), and the extent counts what it keeps.
func TestSparseSeriesKeptAllocation(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"i":"%04d"},"values":[[1700000000,"1"],[1700000060,"2"],[1700000120,"3"]]}`, i)
	}
	b.WriteString(`]}}`)
	body := []byte(b.String())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	e := &entry{}
	e.reset()
	e.merge(decoded(t, body), 1700000000000, 1700000000000+7*24*3600*1000)
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc - before
	kept := e.size()
	t.Logf("body %d B, allocated %d B while decoding and keeping, kept %d B (%.0fx the body)", len(body), alloc, kept, float64(alloc)/float64(len(body)))
	if alloc > 20*uint64(len(body)) {
		t.Errorf("decoding and keeping a %d B answer allocated %d B", len(body), alloc)
	}
	// Each series holds at least its 3 values and its label (the times are shared).
	if kept < 2000*(3*8+2*4) || kept > int64(alloc) {
		t.Errorf("the extent counts %d B for 2,000 series of 3 points (%d B allocated)", kept, alloc)
	}
}

// TestSharedTimesCountedOnce: the series of an answer on one grid keep one array of
// times, also after a part is merged again, and the extent counts it once: its size is
// the values, one set of times and a little per series.
func TestSharedTimesCountedOnce(t *testing.T) {
	const series, points = 100, 1000
	from, step := int64(1700000000000), int64(60000)
	to := from + (points-1)*step
	a := &promclient.Answer{Type: "matrix"}
	times := make([]int64, points)
	for i := range times {
		times[i] = from + int64(i)*step
	}
	for s := range series {
		v := make([]float64, points)
		a.Series = append(a.Series, promclient.Series{Labels: map[string]string{"i": fmt.Sprint(s)}, T: slices.Clone(times), V: v})
	}
	e := &entry{}
	e.reset()
	e.merge(a, from, to)
	tail := to - 10*step
	e.merge(part(a, tail, to), tail, to)
	values, oneTimes := int64(series*points*8), int64(points*8)
	if n := e.size(); n < values+oneTimes || n > values+oneTimes+series*512 {
		t.Errorf("size %d B, want %d B of values, %d B of times and under 512 B a series", n, values, oneTimes)
	}
	var first *int64
	for _, s := range e.series {
		if first == nil {
			first = &s.T[0]
		}
		if &s.T[0] != first {
			t.Fatal("the series do not share their times")
		}
	}
}

// TestSamplesKeptInTimeOrder: samples that come out of order are kept in time order (ties
// in the order given), and the fetched answer itself is left as it came.
func TestSamplesKeptInTimeOrder(t *testing.T) {
	a := &promclient.Answer{Type: "matrix", Series: []promclient.Series{{
		Labels:     map[string]string{"i": "1"},
		T:          []int64{3000, 1000, 2000, 1000},
		V:          []float64{3, 1, 2, -1},
		Histograms: []promclient.Histogram{{T: 2000}, {T: 1000, Buckets: []promclient.Bucket{{Count: 1}}}},
	}}}
	e := &entry{}
	e.reset()
	e.merge(a, 1000, 3000)
	got := e.answer(1000, 3000).Series[0]
	if !slices.Equal(got.T, []int64{1000, 1000, 2000, 3000}) || !slices.Equal(got.V, []float64{1, -1, 2, 3}) ||
		got.Histograms[0].T != 1000 || len(got.Histograms[0].Buckets) != 1 || got.Histograms[1].T != 2000 {
		t.Errorf("kept %+v, want the samples in time order", got)
	}
	if s := a.Series[0]; !slices.Equal(s.T, []int64{3000, 1000, 2000, 1000}) || s.Histograms[0].T != 2000 {
		t.Errorf("the fetched answer was changed: %+v", s)
	}
}
