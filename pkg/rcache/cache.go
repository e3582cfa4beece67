// Package rcache is a results cache made for dashboards. Range-query answers are kept as
// step-aligned extents per (data source, expression, step, grid phase), so a refresh
// fetches only the new tail plus a re-fetch window for late data, and a zoom or range
// shift fetches only what is missing; label and variable lookups are kept briefly.
// Requests for the same extent wait for each other, so identical requests in flight cost
// one upstream call. Memory is bounded (LRU by bytes). Answers are kept decoded, as
// promclient reads them, and handed out as promclient.Answers: a cached answer's frames are
// built exactly as a fetched one's.
package rcache

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Defaults of the cache; the first three are also the settings' defaults (pkg/models
// re-exports them for the config editor).
const (
	// DefaultSizeMiB bounds each data source's results cache; 0 turns it off. The cache
	// keeps decoded samples, about a quarter of the answers' JSON: the three dashboards of a
	// 200-instance fleet over 6 h (50 MB of JSON) keep about 13 MB, so 128 MiB holds some ten
	// such views (other ranges, steps, viewers), and a full cache with the plugin's GC
	// headroom stays under 200 MB beside Grafana on its host (docs/configure.md).
	DefaultSizeMiB = 128
	// DefaultRefetchWindow: the newest part of an answer is fetched again on refresh
	// until it is this old, since CloudWatch data can arrive minutes late.
	DefaultRefetchWindow = 10 * time.Minute
	DefaultFresh         = FreshOneStep
	// DefaultLookupTTL bounds how long label and variable lookups are reused: the values
	// of a dashboard's variables (endpoints, instance types) change far more slowly.
	DefaultLookupTTL = 5 * time.Minute
)

// Options.Fresh values, as jsonData.cacheFreshFor spells them: a positive duration reuses an
// answer for that long after it was fetched.
const (
	// FreshOneStep ("step", the zero value): an answer is reused until the second
	// boundary of its step passes after it was fetched (the instant queries' step is
	// timeInterval). CloudWatch publishes once per period and a step is at least that long,
	// so a refreshed panel lacks at most its newest point.
	FreshOneStep time.Duration = 0
	// FreshNever ("0s"): every request fetches its new tail and the re-fetch window.
	FreshNever time.Duration = -1
)

// Options configure a Cache; zero values mean the defaults, except RefetchWindow, which
// means what jsonData.cacheRefetchWindow does (0: no re-fetch window).
type Options struct {
	MaxBytes      int64
	RefetchWindow time.Duration
	// Fresh is how long an answer is served as it is, without asking upstream again
	// (jsonData.cacheFreshFor as pkg/models reads it):
	//   - FreshOneStep (0, the default): until the second boundary of its step
	//     (range) or of the instant step passes after it was fetched. CloudWatch publishes a series once per
	//     period and the step is at least that period, so in that time at most one new step
	//     of data can be complete: a served range answer lacks at most the request's newest
	//     point, and its re-fetch window holds what had arrived when it was fetched;
	//   - > 0: for that long after it was fetched (serving up to that many newer steps' worth
	//     of points short), as Grafana's own query caching does;
	//   - FreshNever (< 0): every request fetches its new tail and the re-fetch window.
	Fresh     time.Duration
	LookupTTL time.Duration
	// KeepFailure picks the failed answers that asking again at once would only repeat (an
	// execution timeout of a query too heavy for the API's limit): such a failure is given
	// again, without a call, under the same freshness rule as an answer, to requests that
	// need as much as the failed call asked for. nil keeps none.
	KeepFailure func(error) bool
	Now         func() time.Time
}

// Key names a range query's extent. DataSource keeps data sources apart.
type Key struct {
	DataSource string
	Expr       string
	Step       time.Duration
}

// Fetch runs the range query for [start, end] upstream and returns its decoded answer;
// an error (including a non-2xx answer) is handed back unchanged.
type Fetch func(ctx context.Context, start, end time.Time) (*promclient.Answer, error)

// Result says how a request was served.
type Result struct {
	Outcome Outcome
	Fetches int   // upstream calls made for this request
	Points  int64 // points fetched upstream for it
	// AsOf is when the answer's newest part (the tail and the re-fetch window) was fetched.
	AsOf time.Time
}

// Outcome of one request.
type Outcome string

const (
	Hit     Outcome = "hit"     // no upstream call
	Partial Outcome = "partial" // only missing or stale parts fetched
	Miss    Outcome = "miss"    // the whole range fetched
	Bypass  Outcome = "bypass"  // not cacheable; fetched and passed through
)

// Stats are the cache's counters since it was built.
type Stats struct {
	Hits, Partials, Misses, Bypasses, Evictions int64
	FailuresReused                              int64 // failures given again without a call
	Fetches, FetchedPoints                      int64
	Bytes, Entries                              int64
}

// Cache is safe for concurrent use.
type Cache struct {
	opts    Options
	mu      sync.Mutex
	lru     *list.List // of *entry, most recent first
	entries map[string]*entry
	bytes   int64
	stats   Stats
}

// New builds a cache.
func New(opts Options) *Cache {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultSizeMiB << 20
	}
	opts.RefetchWindow = max(opts.RefetchWindow, 0)
	if opts.LookupTTL <= 0 {
		opts.LookupTTL = DefaultLookupTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{opts: opts, lru: list.New(), entries: map[string]*entry{}}
}

// entry is one extent or one lookup. lock is held while it is fetched and merged; the
// fields below it belong to the holder.
type entry struct {
	name    string
	lock    chan struct{}
	elem    *list.Element
	evicted bool
	bytes   int64 // set by the lock holder
	booked  int64 // what the cache's total counts for it; under Cache.mu

	// Range extents: points at grid times phase + k·step from start to end (ms).
	step, phase  int64
	start, end   int64
	trusted      int64 // points up to here are past the re-fetch window
	fetchedAt    time.Time
	series       map[string]*series
	warns, infos []string
	// The last kept failure (Options.KeepFailure), when and for how wide a part it came.
	failed     error
	failedAt   time.Time
	failedSpan int64

	// Lookups (bodies as fetched) and instant answers (decoded).
	kept    any
	expires time.Time // lookups: end of the TTL
	evalAt  time.Time // instant answers: the evaluation time asked for
}

// relative references the query range (@ start(), @ end()): its answer at a time depends
// on the range asked, so it cannot be assembled from extents.
var relative = regexp.MustCompile(`@\s*(start|end)\s*\(\s*\)`)

// QueryRange answers the range query [start, end] from the extent, fetching only what is
// missing or still inside the re-fetch window. start and end must lie on the step grid
// the caller always uses (the plugin aligns them). When the whole range is fetched, the
// answer is the fetched one itself, exactly an uncached answer (the extent shares its
// samples); otherwise it is assembled from the extent: series in label order, those
// without samples in the range left out. Answers other than a matrix are handed over as
// fetched and not kept. The answer is shared with the cache: read it, never change it.
func (c *Cache) QueryRange(ctx context.Context, k Key, start, end time.Time, fetch Fetch) (*promclient.Answer, Result, error) {
	step := k.Step.Milliseconds()
	s, e := start.UnixMilli(), end.UnixMilli()
	if step <= 0 || e < s || relative.MatchString(k.Expr) {
		return c.bypass(ctx, start, end, fetch)
	}
	phase := mod(s, step)
	ent, err := c.acquire(ctx, fmt.Sprintf("range\x00%s\x00%d\x00%d\x00%s", k.DataSource, step, phase, k.Expr))
	if err != nil {
		return nil, Result{}, err
	}
	defer func() {
		ent.bytes = ent.size()
		c.releaseEntry(ent)
	}()
	ent.step, ent.phase = step, phase
	now := c.opts.Now()

	var parts [][2]int64
	switch {
	case ent.series == nil || e < ent.start-step || s > ent.end+step:
		ent.reset()
		parts = [][2]int64{{s, e}}
	default:
		if s < ent.start {
			parts = append(parts, [2]int64{s, ent.start - step})
		}
		// A tail that must be fetched comes with the re-fetch window: the call is made anyway.
		if lag, ok := c.servable(ent, now); !ok || e > ent.end+lag {
			if from := ent.floor(min(ent.trusted, ent.end)) + step; from <= e {
				parts = append(parts, [2]int64{from, e})
			}
		}
	}
	if err := c.recentFailure(ent, now, parts); err != nil {
		return nil, Result{Outcome: Hit}, err
	}
	res := Result{Outcome: Hit}
	whole := len(parts) == 1 && parts[0] == [2]int64{s, e}
	var fetched *promclient.Answer
	for _, p := range parts {
		a, err := fetch(ctx, time.UnixMilli(p[0]).UTC(), time.UnixMilli(p[1]).UTC())
		if err != nil {
			if c.opts.KeepFailure != nil && c.opts.KeepFailure(err) {
				ent.failed, ent.failedAt, ent.failedSpan = err, now, p[1]-p[0]
			}
			return nil, Result{}, err
		}
		res.Fetches++
		if a.Type != "matrix" {
			ent.reset()
			if whole {
				c.count(func(st *Stats) { st.Bypasses++; st.Fetches++ })
				return a, Result{Outcome: Bypass, Fetches: 1}, nil
			}
			// Part of the range did not come back as a matrix: ask for all of it plainly.
			a, r, err := c.bypass(ctx, start, end, fetch)
			r.Fetches += res.Fetches
			return a, r, err
		}
		fetched = a
		ent.failed = nil
		res.Points += ent.merge(a, p[0], p[1])
		if p[1] >= ent.end {
			ent.trusted = min(p[1], now.Add(-c.opts.RefetchWindow).UnixMilli())
			ent.fetchedAt = now
		}
		ent.start, ent.end = min(ent.start, p[0]), max(ent.end, p[1])
	}
	switch {
	case whole:
		res.Outcome = Miss
	case len(parts) > 0:
		res.Outcome = Partial
	}
	ent.trim(s, e)
	c.count(func(st *Stats) {
		switch res.Outcome {
		case Hit:
			st.Hits++
		case Partial:
			st.Partials++
		case Miss:
			st.Misses++
		}
		st.Fetches += int64(res.Fetches)
		st.FetchedPoints += res.Points
	})
	res.AsOf = ent.fetchedAt
	if whole {
		return fetched, res, nil
	}
	return ent.answer(s, e), res, nil
}

// fresh says whether what was fetched at `at` may still be given without a call: for
// Options.Fresh after it, or by default until the second boundary of the grid
// phase + k·step after it.
func (c *Cache) fresh(at, now time.Time, step, phase int64) bool {
	switch {
	case c.opts.Fresh < 0 || at.IsZero():
		return false
	case c.opts.Fresh > 0:
		return now.Sub(at) < c.opts.Fresh
	}
	floor := func(t time.Time) int64 { return t.UnixMilli() - mod(t.UnixMilli()-phase, step) }
	return floor(now)-floor(at) <= step
}

// recentFailure is the kept failure a request gets again without a call: while it is
// fresh, when a part the request needs is as wide as the failed one (less one step, so
// the same panel refreshed a minute later counts; a zoom in is asked).
func (c *Cache) recentFailure(ent *entry, now time.Time, parts [][2]int64) error {
	if ent.failed == nil {
		return nil
	}
	if !c.fresh(ent.failedAt, now, ent.step, ent.phase) {
		ent.failed = nil
		return nil
	}
	for _, p := range parts {
		if p[1]-p[0] >= ent.failedSpan-ent.step {
			c.count(func(st *Stats) { st.FailuresReused++ })
			return &RecentFailure{Err: ent.failed, At: ent.failedAt}
		}
	}
	return nil
}

// RecentFailure is a kept failure given again; it wraps the original error.
type RecentFailure struct {
	Err error
	At  time.Time
}

func (e *RecentFailure) Error() string {
	return e.Err.Error() + " (this is the answer of " + e.At.UTC().Format(time.TimeOnly) +
		" UTC, kept like a cached answer: the query is sent again when a cached answer would be refreshed)"
}

func (e *RecentFailure) Unwrap() error { return e.Err }

// servable says whether the extent's tail may be served as it is, and by how much the
// request's end may then pass the extent's end (those points are left out).
func (c *Cache) servable(ent *entry, now time.Time) (lag int64, ok bool) {
	switch {
	case !c.fresh(ent.fetchedAt, now, ent.step, ent.phase):
		return 0, false
	case c.opts.Fresh > 0:
		return c.opts.Fresh.Milliseconds(), true
	}
	fetched := ent.floor(ent.fetchedAt.UnixMilli())
	// The extent reached the present when it was fetched, or the step before it: a request
	// made just before a boundary and answered just after it (a slow cold load) covers the
	// data up to its own end as of the fetch, so its freshness is that step's, not the
	// fetch's: the request's newest point may be left out as in the first case.
	if ent.end >= fetched-ent.step {
		return ent.step, true
	}
	return 0, true
}

func (c *Cache) bypass(ctx context.Context, start, end time.Time, fetch Fetch) (*promclient.Answer, Result, error) {
	a, err := fetch(ctx, start, end)
	c.count(func(st *Stats) { st.Bypasses++; st.Fetches++ })
	return a, Result{Outcome: Bypass, Fetches: 1}, err
}

// Instant answers an instant query at t from an answer that is still fresh (Options.Fresh,
// with step as the grid of the one-step rule: the data source's publish period) for a
// time at most that far from t, else fetches it. The answer is kept as fetched, and
// shared: read it, never change it.
func (c *Cache) Instant(ctx context.Context, dataSource, expr string, t time.Time, step time.Duration, fetch func(context.Context) (*promclient.Answer, error)) (*promclient.Answer, Outcome, error) {
	if c.opts.Fresh < 0 || (c.opts.Fresh == 0 && step < time.Millisecond) {
		a, err := fetch(ctx)
		c.count(func(st *Stats) { st.Bypasses++; st.Fetches++ })
		return a, Bypass, err
	}
	return keep(c, ctx, "instant\x00"+dataSource+"\x00"+expr, fetch, answerSize,
		func(e *entry, now time.Time) bool {
			if c.opts.Fresh > 0 {
				return now.Sub(e.fetchedAt) < c.opts.Fresh && t.Sub(e.evalAt).Abs() <= c.opts.Fresh
			}
			p := step.Milliseconds()
			grid := func(t time.Time) int64 { return t.UnixMilli() - mod(t.UnixMilli(), p) }
			apart := grid(t) - grid(e.evalAt)
			return c.fresh(e.fetchedAt, now, p, 0) && max(apart, -apart) <= p
		},
		func(e *entry, now time.Time) { e.fetchedAt, e.evalAt = now, t }, true)
}

// answerSize is an instant answer's memory in bytes.
func answerSize(a *promclient.Answer) int64 {
	n := int64(256 + len(a.Text))
	counted := map[*int64]bool{}
	for _, s := range a.Series {
		n += seriesSize(s, counted)
	}
	return n
}

// Lookup answers a label or variable lookup from the cache for up to ttl (≤ 0: the
// default), else fetches it. Only successful answers are kept: the caller's fetch returns
// an error for anything else.
func (c *Cache) Lookup(ctx context.Context, dataSource, request string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, Outcome, error) {
	if ttl <= 0 {
		ttl = c.opts.LookupTTL
	}
	return keep(c, ctx, "lookup\x00"+dataSource+"\x00"+request, fetch, func(b []byte) int64 { return int64(len(b)) },
		func(e *entry, now time.Time) bool { return now.Before(e.expires) },
		func(e *entry, now time.Time) { e.expires = now.Add(ttl) }, false)
}

// keep serves a whole answer (of size bytes) kept as fetched while valid says so; asked
// records when and for what a newly fetched one was asked. With failures, a failure
// Options.KeepFailure picks is kept and given again the same way.
func keep[T any](c *Cache, ctx context.Context, name string, fetch func(context.Context) (T, error), size func(T) int64,
	valid func(e *entry, now time.Time) bool, asked func(e *entry, now time.Time), failures bool) (T, Outcome, error) {
	var none T
	ent, err := c.acquire(ctx, name)
	if err != nil {
		return none, "", err
	}
	defer c.releaseEntry(ent)
	now := c.opts.Now()
	if kept, ok := ent.kept.(T); ok && valid(ent, now) {
		c.count(func(st *Stats) { st.Hits++ })
		return kept, Hit, nil
	}
	if ent.failed != nil && valid(ent, now) {
		c.count(func(st *Stats) { st.FailuresReused++ })
		return none, Hit, &RecentFailure{Err: ent.failed, At: ent.failedAt}
	}
	v, err := fetch(ctx)
	c.count(func(st *Stats) { st.Misses++; st.Fetches++ })
	ent.kept, ent.failed, ent.bytes = nil, nil, int64(len(ent.name))+128
	if err != nil {
		if failures && c.opts.KeepFailure != nil && c.opts.KeepFailure(err) {
			ent.failed, ent.failedAt = err, now
			asked(ent, now)
		}
		return v, Miss, err
	}
	ent.kept = v
	asked(ent, now)
	ent.bytes += size(v)
	return v, Miss, nil
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Bytes, st.Entries = c.bytes, int64(len(c.entries))
	return st
}

func (c *Cache) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
	var delta Stats
	f(&delta)
	publish(delta)
}

// acquire finds or creates the named entry and takes its lock (or gives up with ctx).
func (c *Cache) acquire(ctx context.Context, name string) (*entry, error) {
	c.mu.Lock()
	ent, ok := c.entries[name]
	if !ok {
		ent = &entry{name: name, lock: make(chan struct{}, 1)}
		ent.elem = c.lru.PushFront(ent)
		c.entries[name] = ent
	} else {
		c.lru.MoveToFront(ent.elem)
	}
	c.mu.Unlock()
	select {
	case ent.lock <- struct{}{}:
		return ent, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// releaseEntry books the entry's new size and evicts least recently used entries (never
// the one just used, unless it alone is over the limit) until the cache fits.
func (c *Cache) releaseEntry(ent *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { <-ent.lock }()
	if ent.evicted {
		return
	}
	c.bytes += ent.bytes - ent.booked
	ent.booked = ent.bytes
	for c.bytes > c.opts.MaxBytes && c.lru.Len() > 0 {
		victim := c.lru.Back().Value.(*entry)
		if victim == ent && c.lru.Len() > 1 {
			c.lru.MoveToFront(ent.elem)
			continue
		}
		c.evict(victim)
	}
}

func (c *Cache) evict(ent *entry) {
	c.lru.Remove(ent.elem)
	delete(c.entries, ent.name)
	c.bytes -= ent.booked
	ent.evicted = true
	c.stats.Evictions++
	publish(Stats{Evictions: 1})
}

func (e *entry) reset() {
	e.series, e.warns, e.infos = map[string]*series{}, nil, nil
	e.start, e.end, e.trusted = 1<<62, -1<<62, -1<<62
	e.fetchedAt = time.Time{}
}

// floor is the last grid time at or before t.
func (e *entry) floor(t int64) int64 { return t - mod(t-e.phase, e.step) }

// merge replaces what the extent holds in [from, to] with a's samples and returns how
// many samples a brought.
func (e *entry) merge(a *promclient.Answer, from, to int64) int64 {
	for _, s := range e.series {
		s.Series = without(s.Series, from, to)
	}
	for _, as := range a.Series {
		ns := newSeries(as)
		if old, ok := e.series[ns.key()]; ok {
			old.add(ns.Series)
		} else {
			e.series[ns.key()] = ns
		}
	}
	shareTimes(e.series)
	e.warns = union(e.warns, a.Warnings)
	e.infos = union(e.infos, a.Infos)
	return int64(a.Points())
}

// trim drops what lies more than one request span before the request, so an extent that
// follows a refreshing dashboard does not grow without end.
func (e *entry) trim(s, end int64) {
	span := end - s
	if e.start >= s-2*span {
		return
	}
	cut := e.floor(s-span) + e.step
	for k, sr := range e.series {
		sr.Series = without(sr.Series, -1<<63, cut-1)
		if len(sr.T) == 0 && len(sr.Histograms) == 0 {
			delete(e.series, k)
		}
	}
	shareTimes(e.series)
	e.start = cut
}

// answer is the extent's samples in [from, to] as a matrix answer: series in label order,
// those without samples there left out. It shares the extent's sample arrays.
func (e *entry) answer(from, to int64) *promclient.Answer {
	sorted := make([]*series, 0, len(e.series))
	for _, s := range e.series {
		sorted = append(sorted, s)
	}
	slices.SortFunc(sorted, func(a, b *series) int { return compareLabels(a.pairs, b.pairs) })
	a := &promclient.Answer{Type: "matrix", Warnings: slices.Clone(e.warns), Infos: slices.Clone(e.infos)}
	for _, s := range sorted {
		if in := within(s.Series, from, to); len(in.T) > 0 || len(in.Histograms) > 0 {
			a.Series = append(a.Series, in)
		}
	}
	return a
}

func (e *entry) size() int64 {
	n := int64(len(e.name)) + 256
	counted := map[*int64]bool{}
	for _, s := range e.series {
		n += s.size(counted)
	}
	return n
}

func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// Describe is a short line for the query inspector.
func (r Result) Describe() string {
	return "cache " + string(r.Outcome) + ", " + strconv.Itoa(r.Fetches) + " upstream call(s), " + strconv.FormatInt(r.Points, 10) + " points fetched"
}

// Process-wide counters on the default registry, which the plugin SDK serves to Grafana.
var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "requests_total",
		Help: "Range queries and lookups served by the results cache, by outcome (hit, partial, miss, bypass, failure_reused).",
	}, []string{"outcome"})
	fetches = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "upstream_fetches_total",
		Help: "Upstream calls the results cache made.",
	})
	fetchedPoints = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "fetched_points_total",
		Help: "Points fetched upstream by the results cache.",
	})
	evictions = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "evictions_total",
		Help: "Entries evicted to keep the results cache within its byte limit.",
	})
)

func init() {
	for _, c := range []prometheus.Collector{requests, fetches, fetchedPoints, evictions} {
		// Registered once per process; a second registration (tests) is harmless.
		_ = prometheus.DefaultRegisterer.Register(c)
	}
}

func publish(d Stats) {
	for outcome, n := range map[Outcome]int64{Hit: d.Hits, Partial: d.Partials, Miss: d.Misses, Bypass: d.Bypasses, "failure_reused": d.FailuresReused} {
		if n > 0 {
			requests.WithLabelValues(string(outcome)).Add(float64(n))
		}
	}
	fetches.Add(float64(d.Fetches))
	fetchedPoints.Add(float64(d.FetchedPoints))
	evictions.Add(float64(d.Evictions))
}

// series is one labelled series of an extent: its samples in time order. The sample
// slices are never written once set, because the answers the cache hands out share them
// (and series with the same times share their T): a merge or a trim builds new ones.
type series struct {
	pairs []string // name, value, name, value... sorted by name: the series' key and order
	promclient.Series
}

func newSeries(s promclient.Series) *series {
	names := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		names = append(names, k)
	}
	slices.Sort(names)
	pairs := make([]string, 0, 2*len(names))
	for _, k := range names {
		pairs = append(pairs, k, s.Labels[k])
	}
	return &series{pairs: pairs, Series: inTimeOrder(s)}
}

func (s *series) key() string { return strings.Join(s.pairs, "\xff") }

// compareLabels orders label sets as Prometheus orders its results: pair by pair, name
// then value, the shorter set first when one is a prefix of the other.
func compareLabels(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func histTimes(hs []promclient.Histogram) []int64 {
	ts := make([]int64, len(hs))
	for i, h := range hs {
		ts[i] = h.T
	}
	return ts
}

// inTimeOrder is s with its samples sorted by time (ties in the order given); s itself
// when they already are, as Prometheus gives them.
func inTimeOrder(s promclient.Series) promclient.Series {
	if !slices.IsSorted(s.T) {
		order := timeOrder(s.T)
		s.T, s.V = pick(order, s.T, nil), pick(order, s.V, nil)
	}
	if ts := histTimes(s.Histograms); !slices.IsSorted(ts) {
		s.Histograms = pick(timeOrder(ts), s.Histograms, nil)
	}
	return s
}

// timeOrder is the indexes of times in time order, ties in the order given.
func timeOrder(times []int64) []int {
	order := make([]int, len(times))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(times[a], times[b]) })
	return order
}

// merged is the order of the union of two time-ordered sample lists: each entry an index
// into a (≥ 0) or the complement of an index into b; a's sample first on a tie.
func merged(a, b []int64) []int {
	order := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || i < len(a) && a[i] <= b[j] {
			order = append(order, i)
			i++
		} else {
			order = append(order, ^j)
			j++
		}
	}
	return order
}

// pick lays out a's and b's elements in order (see merged), in a new slice.
func pick[T any](order []int, a, b []T) []T {
	if len(order) == 0 {
		return nil
	}
	out := make([]T, len(order))
	for k, i := range order {
		if i >= 0 {
			out[k] = a[i]
		} else {
			out[k] = b[^i]
		}
	}
	return out
}

// add merges b's samples (in time order) into s's.
func (s *series) add(b promclient.Series) {
	if len(b.T) > 0 {
		order := merged(s.T, b.T)
		s.T, s.V = pick(order, s.T, b.T), pick(order, s.V, b.V)
	}
	if len(b.Histograms) > 0 {
		s.Histograms = pick(merged(histTimes(s.Histograms), histTimes(b.Histograms)), s.Histograms, b.Histograms)
	}
}

// span is the index range of the time-ordered times within [from, to].
func span(times []int64, from, to int64) (lo, hi int) {
	lo, _ = slices.BinarySearch(times, from)
	hi, found := slices.BinarySearch(times, to)
	for found && hi < len(times) && times[hi] == to {
		hi++
	}
	return lo, hi
}

// without is s less its samples in [from, to]; s's slices themselves when none are there.
func without(s promclient.Series, from, to int64) promclient.Series {
	if lo, hi := span(s.T, from, to); lo < hi {
		s.T, s.V = slices.Concat(s.T[:lo], s.T[hi:]), slices.Concat(s.V[:lo], s.V[hi:])
	}
	if lo, hi := span(histTimes(s.Histograms), from, to); lo < hi {
		s.Histograms = slices.Concat(s.Histograms[:lo], s.Histograms[hi:])
	}
	return s
}

// within is s's samples in [from, to], sharing s's memory.
func within(s promclient.Series, from, to int64) promclient.Series {
	lo, hi := span(s.T, from, to)
	s.T, s.V = s.T[lo:hi:hi], s.V[lo:hi:hi]
	lo, hi = span(histTimes(s.Histograms), from, to)
	s.Histograms = s.Histograms[lo:hi:hi]
	return s
}

// shareTimes gives series with the same times one T array (an answer's series are
// usually on one grid), so the extent holds one copy. It compares with a few distinct
// arrays only, which covers the answers of one or a few grids.
func shareTimes(all map[string]*series) {
	var distinct [][]int64
	for _, s := range all {
		i := slices.IndexFunc(distinct, func(d []int64) bool { return sameTimes(d, s.T) })
		switch {
		case i >= 0:
			s.T = distinct[i]
		case len(distinct) < 4:
			distinct = append(distinct, s.T)
		}
	}
}

func sameTimes(a, b []int64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b))
}

// size is the series' memory in bytes: its samples and labels, and its label pairs; a T
// array in counted is not counted again.
func (s *series) size(counted map[*int64]bool) int64 {
	n := seriesSize(s.Series, counted) + 24
	for _, l := range s.pairs {
		n += int64(len(l)) + 16
	}
	return n
}

// seriesSize is a decoded series' memory in bytes: the labels map and the sample arrays
// as allocated, a T array in counted not again (series share them).
func seriesSize(s promclient.Series, counted map[*int64]bool) int64 {
	n := int64(136) // the series' slice headers and map header
	for k, v := range s.Labels {
		n += int64(len(k)+len(v)) + 48 // the strings, their headers, the map slot
	}
	if cap(s.T) > 0 && !counted[&s.T[:1][0]] {
		counted[&s.T[:1][0]] = true
		n += 8 * int64(cap(s.T))
	}
	n += 8 * int64(cap(s.V))
	for _, h := range s.Histograms {
		n += 32 + 32*int64(cap(h.Buckets))
	}
	return n
}
