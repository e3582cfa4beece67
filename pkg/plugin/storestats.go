package plugin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// failure is why the store failed this query or is not in use now, nil when neither:
// broken, backing off after a failure, or the failure this query met (a full store fails
// writes without backing off).
func (h *sharedStore) failure(use *storeUse) error {
	if h.broken != nil {
		return h.broken
	}
	if err := h.st.Unavailable(); err != nil {
		return err
	}
	return use.failed()
}

// outage is the store's failure as the user is told of it: the first response after the
// store started failing carries the notice, not every panel's, and again only after the
// store recovered and failed anew. A response that did not use the store proves nothing, so
// the outage lasts until one did (a write, when the store was full: its reads go on).
type outage struct {
	mu    sync.Mutex
	cause error // nil: no outage
}

// report records this response's failure (nil: none) and whether it used the store as the
// outage's cause had prevented; it says the outage's cause (nil when there is none) and
// whether this response starts or ends it.
func (o *outage) report(failed error, use *storeUse) (cause error, started, ended bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case failed != nil:
		started = o.cause == nil
		o.cause = failed
	case o.cause != nil && use.recovered(o.cause):
		o.cause, ended = nil, true
	}
	return o.cause, started, ended
}

// current is the outage's cause, nil when there is none.
func (o *outage) current() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cause
}

// storeUse is what one query's calls to the store found, for its stats.
type storeUse struct {
	mu           sync.Mutex
	hits, misses int  // reads of entries, served from the store or not
	read, wrote  bool // an operation of each kind succeeded
	failures     int
	err          error // the last failure
}

type storeUseKey struct{}

// withStoreUse gives the query a record of its calls to the store.
func withStoreUse(ctx context.Context) (context.Context, *storeUse) {
	u := &storeUse{}
	return context.WithValue(ctx, storeUseKey{}, u), u
}

// storeUseOf is the query's record, nil outside a query (resource calls).
func storeUseOf(ctx context.Context) *storeUse {
	u, _ := ctx.Value(storeUseKey{}).(*storeUse)
	return u
}

// record notes an operation's outcome: err, when it is the store's failure (not the
// caller's cancellation, nor a value the codec refused), else a success of its kind. It
// returns err unchanged.
func (u *storeUse) record(err error, write bool) error {
	if u == nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case sharedstore.IsUnavailable(err):
		u.failures++
		u.err = err
	case err != nil:
	case write:
		u.wrote = true
	default:
		u.read = true
	}
	return err
}

// found records a read of an entry: served from the store or not.
func (u *storeUse) found(hit bool) {
	if u == nil {
		return
	}
	u.record(nil, false)
	u.mu.Lock()
	defer u.mu.Unlock()
	if hit {
		u.hits++
	} else {
		u.misses++
	}
}

func (u *storeUse) failed() error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// recovered says whether the query used the store as cause had prevented: a write after
// the store was full, any operation after other failures.
func (u *storeUse) recovered(cause error) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	var e *sharedstore.Error
	if errors.As(cause, &e) && e.Kind == sharedstore.Full {
		return u.wrote
	}
	return u.read || u.wrote
}

// Stat names in the query inspector.
const (
	storeStatPrefix   = "Shared store: "
	storeStatOff      = "shared store off: "
	storeNoticePrefix = "shared cache unavailable: "
)

// annotate adds the store's state to the response's first frame: hits and misses, or why
// it is unavailable; and, on the first response of an outage, the notice. An alert
// evaluation's response (unseen) gets the stats only and leaves the outage's notice and log
// to the next response someone sees.
func (h *sharedStore) annotate(resp *backend.DataResponse, use *storeUse, unseen bool) {
	if len(resp.Frames) == 0 {
		return // nowhere to say it; the next response with frames will
	}
	f := resp.Frames[0]
	if f.Meta == nil {
		f.Meta = &data.FrameMeta{}
	}
	if h.off != nil {
		f.Meta.Stats = append(f.Meta.Stats, data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatOff + h.off.Error()}})
		return
	}
	var (
		cause          error
		started, ended bool
	)
	if unseen {
		cause = h.failure(use)
		if cause == nil {
			cause = h.outage.current()
		}
	} else {
		cause, started, ended = h.outage.report(h.failure(use), use)
	}
	use.mu.Lock()
	hits, misses, failures := use.hits, use.misses, use.failures
	use.mu.Unlock()
	if cause == nil {
		if ended {
			logInfo("shared store available again")
		}
		f.Meta.Stats = append(f.Meta.Stats,
			data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "hit"}, Value: float64(hits)},
			data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "miss"}, Value: float64(misses)})
		return
	}
	why := strings.TrimPrefix(cause.Error(), storeNoticePrefix)
	f.Meta.Stats = append(f.Meta.Stats, data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "unavailable: " + why}, Value: float64(failures)})
	if started {
		f.Meta.Notices = append(f.Meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: storeNoticePrefix + why})
		logWarn("shared store unavailable: panels are served from the local cache and limiter", "reason", why)
	}
}

// trackedPeer records each call's outcome in the query's storeUse.
type trackedPeer struct{ p rcache.Peer }

func (t trackedPeer) GetExtent(ctx context.Context, name string) (entry.Extent, bool, error) {
	e, ok, err := t.p.GetExtent(ctx, name)
	if u := storeUseOf(ctx); err != nil {
		u.record(err, false)
	} else {
		u.found(ok)
	}
	return e, ok, err
}

// Claim takes a lease: a write.
func (t trackedPeer) Claim(ctx context.Context, name string, lease time.Duration) (rcache.Claim, error) {
	c, err := t.p.Claim(ctx, name, lease)
	if c != nil {
		c = trackedClaim{c, storeUseOf(ctx)}
	}
	return c, storeUseOf(ctx).record(err, true)
}

func (t trackedPeer) AwaitClaim(ctx context.Context, name string, maxWait time.Duration) error {
	return storeUseOf(ctx).record(t.p.AwaitClaim(ctx, name, maxWait), false)
}

func (t trackedPeer) Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, bool, error, error) {
	val, shared, storeErr, err := t.p.Once(ctx, name, ttl, fetch)
	switch u := storeUseOf(ctx); {
	case storeErr != nil:
		u.record(storeErr, false)
	case err == nil && !shared:
		u.found(false)
		u.record(nil, true) // fetched here and stored
	default:
		u.found(shared)
	}
	return val, shared, storeErr, err
}

func (t trackedPeer) Unavailable() error { return t.p.Unavailable() }

// trackedClaim records the outcome of publishing (a write) or releasing a claim.
type trackedClaim struct {
	c   rcache.Claim
	use *storeUse
}

func (c trackedClaim) Publish(ctx context.Context, e entry.Extent, ttl time.Duration) error {
	return c.use.record(c.c.Publish(ctx, e, ttl), true)
}

func (c trackedClaim) Release(ctx context.Context) error {
	return c.use.record(c.c.Release(ctx), false)
}
