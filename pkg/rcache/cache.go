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
	"container/list"
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	shared "github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
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
	// Peer, when set, shares extents and lookups with other replicas (peer.go); nil: this
	// cache alone, exactly as without a shared store.
	Peer Peer
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
	// StoreErr is the shared store's failure (Options.Peer), if any: the request was then
	// served as without the store. Shown once as the store's notice.
	StoreErr error
}

// Outcome of one request.
type Outcome string

const (
	Hit     Outcome = "hit"     // no upstream call
	Partial Outcome = "partial" // only missing or stale parts fetched
	Miss    Outcome = "miss"    // the whole range fetched
	Bypass  Outcome = "bypass"  // not cacheable; fetched and passed through
	// SharedHit: no upstream call, served with what another replica fetched (Options.Peer).
	SharedHit Outcome = "shared hit"
)

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
	ent, err := c.acquire(ctx, rangeName(k, phase))
	if err != nil {
		return nil, Result{}, err
	}
	defer func() {
		ent.bytes = ent.size()
		c.releaseEntry(ent)
	}()
	ent.step, ent.phase = step, phase
	now := c.opts.Now()

	parts := c.parts(ent, s, e, now)
	res := Result{Outcome: Hit}
	var share *sharing // with a peer, when the entry alone does not serve the request
	if len(parts) > 0 && c.opts.Peer != nil {
		share = &sharing{peer: c.opts.Peer, name: ent.name}
		defer c.endSharing(ctx, share)
		share.consult(ctx, func() bool {
			return share.read(ctx, func(x shared.Extent) { ent.adopt(x, c.opts.Now(), c.opts.RefetchWindow) })
		}, func() bool { return len(c.parts(ent, s, e, now)) > 0 })
		if parts = c.parts(ent, s, e, now); len(parts) == 0 {
			res.Outcome = SharedHit
		}
	}
	if err := c.recentFailure(ent, now, parts); err != nil {
		return nil, Result{Outcome: Hit, StoreErr: share.failure()}, err
	}
	whole := len(parts) == 1 && parts[0] == [2]int64{s, e}
	var fetched *promclient.Answer
	for _, p := range parts {
		a, err := fetch(ctx, time.UnixMilli(p[0]).UTC(), time.UnixMilli(p[1]).UTC())
		if err != nil {
			if c.opts.KeepFailure != nil && c.opts.KeepFailure(err) {
				ent.failed, ent.failedAt, ent.failedSpan = err, now, p[1]-p[0]
			}
			return nil, Result{StoreErr: share.failure()}, err
		}
		res.Fetches++
		if a.Type != "matrix" {
			ent.reset()
			if whole {
				c.count(func(st *Stats) { st.Bypasses++; st.Fetches++ })
				return a, Result{Outcome: Bypass, Fetches: 1, StoreErr: share.failure()}, nil
			}
			// Part of the range did not come back as a matrix: ask for all of it plainly.
			a, r, err := c.bypass(ctx, start, end, fetch)
			r.Fetches += res.Fetches
			r.StoreErr = share.failure()
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
	// Published before the trim: the shared extent keeps the widest history (for the
	// replicas that ask more of it), this one only what its requests need.
	local := share != nil && share.claim != nil && res.Fetches > 0 && !share.publishExtent(ctx, ent)
	ent.trim(s, e)
	res.StoreErr = share.failure()
	c.count(func(st *Stats) {
		if local {
			st.KeptLocal++
		}
		switch res.Outcome {
		case Hit:
			st.Hits++
		case SharedHit:
			st.SharedHits++
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

// parts are the ranges the request [s, e] needs from upstream, given the extent (reset
// when the request does not touch it).
func (c *Cache) parts(ent *entry, s, e int64, now time.Time) [][2]int64 {
	step := ent.step
	if ent.series == nil || e < ent.start-step || s > ent.end+step {
		ent.reset()
		return [][2]int64{{s, e}}
	}
	var parts [][2]int64
	if s < ent.start {
		parts = append(parts, [2]int64{s, ent.start - step})
	}
	// A tail that must be fetched comes with the re-fetch window: the call is made anyway.
	if lag, ok := c.servable(ent, now); !ok || e > ent.end+lag {
		if from := ent.floor(min(ent.trusted, ent.end)) + step; from <= e {
			parts = append(parts, [2]int64{from, e})
		}
	}
	return parts
}

// rangeName is the name of k's extent on the grid phase + k·step: the local entry's and,
// with Options.Peer, the shared one's.
func rangeName(k Key, phase int64) string {
	return fmt.Sprintf("range\x00%s\x00%d\x00%d\x00%s", k.DataSource, k.Step.Milliseconds(), phase, k.Expr)
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
// shared: read it, never change it. With Options.Peer, an answer missing here (or no
// longer valid for t) is read from the store and served by the same rule, as of its fetch
// and for its evaluation time (outcome SharedHit), or fetched once across replicas and
// published (share_instant.go). A store failure is counted (Stats.StoreErrors) and the
// answer fetched here; Peer.Unavailable says why.
func (c *Cache) Instant(ctx context.Context, dataSource, expr string, t time.Time, step time.Duration, fetch func(context.Context) (*promclient.Answer, error)) (*promclient.Answer, Outcome, error) {
	if c.opts.Fresh < 0 || (c.opts.Fresh == 0 && step < time.Millisecond) {
		a, err := fetch(ctx)
		c.count(func(st *Stats) { st.Bypasses++; st.Fetches++ })
		return a, Bypass, err
	}
	// valid says whether an answer fetched at fetchedAt for the time evalAt may be given
	// for t at now.
	valid := func(fetchedAt, evalAt, now time.Time) bool {
		if c.opts.Fresh > 0 {
			return now.Sub(fetchedAt) < c.opts.Fresh && t.Sub(evalAt).Abs() <= c.opts.Fresh
		}
		p := step.Milliseconds()
		grid := func(t time.Time) int64 { return t.UnixMilli() - mod(t.UnixMilli(), p) }
		apart := grid(t) - grid(evalAt)
		return c.fresh(fetchedAt, now, p, 0) && max(apart, -apart) <= p
	}
	name := "instant\x00" + dataSource + "\x00" + expr
	get, evalAt := fetchedNow(fetch), t
	if c.opts.Peer != nil {
		// Another replica's answer is kept for the time it was evaluated at (evalAt).
		get = func(ctx context.Context) (*promclient.Answer, time.Time, error) {
			return c.sharedInstant(ctx, name, t, c.instantTTL(step), valid, fetch, &evalAt)
		}
	}
	return keep(c, ctx, name, get, answerSize,
		func(e *entry, now time.Time) bool { return valid(e.fetchedAt, e.evalAt, now) },
		func(e *entry, at time.Time) { e.fetchedAt, e.evalAt = at, evalAt }, true)
}

// Lookup answers a label or variable lookup from the cache for up to ttl (≤ 0: the
// default), else fetches it. Only successful answers are kept: the caller's fetch returns
// an error for anything else. With Options.Peer, a lookup missing here is read from the
// store, or fetched once across replicas (outcome SharedHit when another replica fetched
// it); it is then kept until ttl after that fetch, as if fetched here. A store failure is
// counted (Stats.StoreErrors) and the lookup fetched here; Peer.Unavailable says why.
func (c *Cache) Lookup(ctx context.Context, dataSource, request string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, Outcome, error) {
	if ttl <= 0 {
		ttl = c.opts.LookupTTL
	}
	name := "lookup\x00" + dataSource + "\x00" + request
	get := fetchedNow(fetch)
	if c.opts.Peer != nil {
		get = func(ctx context.Context) ([]byte, time.Time, error) { return c.sharedLookup(ctx, name, ttl, fetch) }
	}
	return keep(c, ctx, name, get, func(b []byte) int64 { return int64(len(b)) },
		func(e *entry, now time.Time) bool { return now.Before(e.expires) },
		func(e *entry, at time.Time) { e.expires = at.Add(ttl) }, false)
}

// fetchedNow is a fetch made by this call: keep takes its time as now.
func fetchedNow[T any](fetch func(context.Context) (T, error)) func(context.Context) (T, time.Time, error) {
	return func(ctx context.Context) (T, time.Time, error) {
		v, err := fetch(ctx)
		return v, time.Time{}, err
	}
}

// keep serves a whole answer (of size bytes) kept as fetched while valid says so; asked
// records when and for what a newly fetched one was asked. fetch says when its value was
// fetched upstream: zero when by this call, else by another replica (a shared hit, kept as
// of then). With failures, a failure Options.KeepFailure picks is kept and given again the
// same way.
func keep[T any](c *Cache, ctx context.Context, name string, fetch func(context.Context) (T, time.Time, error), size func(T) int64,
	valid func(e *entry, now time.Time) bool, asked func(e *entry, at time.Time), failures bool) (T, Outcome, error) {
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
	v, at, err := fetch(ctx)
	out := Miss
	if at.IsZero() {
		at = now
		c.count(func(st *Stats) { st.Misses++; st.Fetches++ })
	} else {
		out = SharedHit
		c.count(func(st *Stats) { st.SharedHits++ })
	}
	ent.kept, ent.failed, ent.bytes = nil, nil, int64(len(ent.name))+128
	if err != nil {
		if failures && c.opts.KeepFailure != nil && c.opts.KeepFailure(err) {
			ent.failed, ent.failedAt = err, now
			asked(ent, now)
		}
		return v, out, err
	}
	ent.kept = v
	asked(ent, at)
	ent.bytes += size(v)
	return v, out, nil
}
