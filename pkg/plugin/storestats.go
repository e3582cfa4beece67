package plugin

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// unavailable is why the store is not in use now, nil when it is: broken, backing off
// after a failure, or the failure this query met (a full store fails writes without
// backing off).
func (h *sharedStore) unavailable(use *storeUse) error {
	if h.broken != nil {
		return h.broken
	}
	if err := h.st.Unavailable(); err != nil {
		return err
	}
	return use.failed()
}

// outage picks the response that carries the store's notice: the first after the store
// started failing, not every panel's, and again only after it recovered and failed anew.
type outage struct {
	mu sync.Mutex
	on bool
}

// report records whether the store is failing and says whether this response starts an
// outage or ends one.
func (o *outage) report(failing bool) (started, ended bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	started, ended = failing && !o.on, !failing && o.on
	o.on = failing
	return started, ended
}

// storeUse is what one query's calls to the store found, for its stats.
type storeUse struct {
	mu           sync.Mutex
	hits, misses int
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

// found records a read: served from the store or not.
func (u *storeUse) found(hit bool) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if hit {
		u.hits++
	} else {
		u.misses++
	}
}

// fault records err when it is the store's failure (not the caller's cancellation, nor a
// value the codec refused) and returns it unchanged.
func (u *storeUse) fault(err error) error {
	if u == nil || !sharedstore.IsUnavailable(err) {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.failures++
	u.err = err
	return err
}

func (u *storeUse) failed() error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// Stat names in the query inspector.
const (
	storeStatPrefix   = "Shared store: "
	storeNoticePrefix = "shared cache unavailable: "
)

// annotate adds the store's state to the response's first frame: hits and misses, or why
// it is unavailable; and, on the first response of an outage, the notice.
func (h *sharedStore) annotate(resp *backend.DataResponse, use *storeUse) {
	if len(resp.Frames) == 0 {
		return // nowhere to say it; the next response with frames will
	}
	f := resp.Frames[0]
	if f.Meta == nil {
		f.Meta = &data.FrameMeta{}
	}
	err := h.unavailable(use)
	if err == nil {
		if _, ended := h.outage.report(false); ended {
			logInfo("shared store available again")
		}
		use.mu.Lock()
		hits, misses := use.hits, use.misses
		use.mu.Unlock()
		f.Meta.Stats = append(f.Meta.Stats,
			data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "hit"}, Value: float64(hits)},
			data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "miss"}, Value: float64(misses)})
		return
	}
	why := strings.TrimPrefix(err.Error(), storeNoticePrefix)
	use.mu.Lock()
	failures := use.failures
	use.mu.Unlock()
	f.Meta.Stats = append(f.Meta.Stats, data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "unavailable: " + why}, Value: float64(failures)})
	if started, _ := h.outage.report(true); started {
		f.Meta.Notices = append(f.Meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: storeNoticePrefix + why})
		logWarn("shared store unavailable: panels are served from the local cache and limiter", "reason", why)
	}
}

// trackedPeer records each call's outcome in the query's storeUse.
type trackedPeer struct{ p rcache.Peer }

func (t trackedPeer) GetExtent(ctx context.Context, name string) (entry.Extent, bool, error) {
	e, ok, err := t.p.GetExtent(ctx, name)
	if u := storeUseOf(ctx); err != nil {
		u.fault(err)
	} else {
		u.found(ok)
	}
	return e, ok, err
}

func (t trackedPeer) Claim(ctx context.Context, name string, lease time.Duration) (rcache.Claim, error) {
	c, err := t.p.Claim(ctx, name, lease)
	if c != nil {
		c = trackedClaim{c, storeUseOf(ctx)}
	}
	return c, storeUseOf(ctx).fault(err)
}

func (t trackedPeer) AwaitClaim(ctx context.Context, name string, maxWait time.Duration) error {
	return storeUseOf(ctx).fault(t.p.AwaitClaim(ctx, name, maxWait))
}

func (t trackedPeer) Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, bool, error, error) {
	val, shared, storeErr, err := t.p.Once(ctx, name, ttl, fetch)
	if u := storeUseOf(ctx); storeErr != nil {
		u.fault(storeErr)
	} else {
		u.found(shared)
	}
	return val, shared, storeErr, err
}

func (t trackedPeer) Unavailable() error { return t.p.Unavailable() }

// trackedClaim records the failures of publishing or releasing a claim.
type trackedClaim struct {
	c   rcache.Claim
	use *storeUse
}

func (c trackedClaim) Publish(ctx context.Context, e entry.Extent, ttl time.Duration) error {
	return c.use.fault(c.c.Publish(ctx, e, ttl))
}

func (c trackedClaim) Release(ctx context.Context) error { return c.use.fault(c.c.Release(ctx)) }
