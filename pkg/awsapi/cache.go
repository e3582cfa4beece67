package awsapi

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of one Cached: entries, and items held (alarms, transitions, endpoints, ICs).
const (
	maxCacheEntries = 64
	maxCacheItems   = 50_000
	// inventoryFactor: the inventory changes slowly, so it is kept this many TTLs
	// (60 s at the usual 15 s).
	inventoryFactor = 4
	// An alarm's state changes only when CloudWatch evaluates it, once per its period
	// (10 s, 30 s or a multiple of 60 s; usually 60 s) or a PromQL alarm's evaluation
	// interval. An alarms answer is kept for the shortest of its alarms' periods, so a
	// shown state is at most one evaluation late, bounded by these (the ttl when no
	// alarm says).
	minAlarmKeep = 10 * time.Second
	maxAlarmKeep = time.Minute
)

// Cached answers repeated calls from memory for a short while: alarms for their shortest
// evaluation period (10–60 s, see minAlarmKeep), contributors and history (keyed by range
// and names) for ttl, the inventory for 4×ttl; ttl 0 keeps nothing. Identical
// concurrent calls share one upstream call; errors are not kept. Use one per data source
// instance, so instances never share answers. It starts no goroutines. Answers are
// shared between callers, who must not modify them. ShareThrough shares them with the
// plugin's other replicas too (not the probes).
func Cached(api API, ttl time.Duration, now func() time.Time, opts ...CacheOption) API {
	return newCached(api, ttl, now, opts)
}

func newCached(api API, ttl time.Duration, now func() time.Time, opts []CacheOption) *cached {
	if now == nil {
		now = time.Now
	}
	c := &cached{api: api, ttl: ttl, now: now, entries: map[string]*entry{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

type cached struct {
	api   API
	ttl   time.Duration
	now   func() time.Time
	share *share // nil: answers stay in this process

	mu      sync.Mutex
	entries map[string]*entry
	items   int // held by ready entries
}

type entry struct {
	done    chan struct{} // closed when val/err are set
	val     any
	err     error
	expires time.Time
	items   int
}

// errShared is what callers waiting for a call that panicked get; the panic itself goes
// to the caller that made the call.
var errShared = errors.New("awsapi: the shared AWS call failed with an internal error; try again")

func (c *cached) Alarms(ctx context.Context, q AlarmQuery) ([]Alarm, error) {
	return get(ctx, c, "alarms\x00"+q.NamePrefix, wireAlarms, c.alarmKeep, lenOf[Alarm], func(ctx context.Context) ([]Alarm, error) { return c.api.Alarms(ctx, q) })
}

// alarmKeep is how long an alarms answer is kept: the shortest evaluation period among its
// alarms, within [minAlarmKeep, maxAlarmKeep]; the ttl when none says.
func (c *cached) alarmKeep(alarms []Alarm) time.Duration {
	var every time.Duration
	for _, a := range alarms {
		if a.Every > 0 && (every == 0 || a.Every < every) {
			every = a.Every
		}
	}
	if c.ttl <= 0 || every == 0 {
		return c.ttl
	}
	return min(max(every, minAlarmKeep), maxAlarmKeep)
}

func (c *cached) Contributors(ctx context.Context, alarmName string) ([]Contributor, error) {
	return get(ctx, c, "contributors\x00"+alarmName, wireContributors, keepFor[[]Contributor](c.ttl), lenOf[Contributor], func(ctx context.Context) ([]Contributor, error) {
		return c.api.Contributors(ctx, alarmName)
	})
}

func (c *cached) History(ctx context.Context, q HistoryQuery) ([]Transition, error) {
	key := "history\x00" + strconv.FormatInt(q.From.UnixNano(), 10) + "\x00" + strconv.FormatInt(q.To.UnixNano(), 10) + "\x00" + strings.Join(q.AlarmNames, "\x00")
	return get(ctx, c, key, wireHistory, keepFor[[]Transition](c.ttl), lenOf[Transition], func(ctx context.Context) ([]Transition, error) { return c.api.History(ctx, q) })
}

func (c *cached) Inventory(ctx context.Context) (Inventory, error) {
	return get(ctx, c, "inventory", wireInventory, keepFor[Inventory](inventoryFactor*c.ttl), func(inv Inventory) int {
		n := 1
		for _, e := range inv.Endpoints {
			n += 1 + len(e.Variants) + len(e.Components)
		}
		return n
	}, c.api.Inventory)
}

// ScalingTargets is kept as long as the inventory: policies change as seldom.
func (c *cached) ScalingTargets(ctx context.Context) ([]ScalableTarget, error) {
	return get(ctx, c, "scaling", wireScaling, keepFor[[]ScalableTarget](inventoryFactor*c.ttl), func(ts []ScalableTarget) int {
		n := 1
		for _, t := range ts {
			n += 1 + len(t.Policies)
		}
		return n
	}, c.api.ScalingTargets)
}

// ProbeScaling is not cached, like ProbeAlarms.
func (c *cached) ProbeScaling(ctx context.Context) error { return c.api.ProbeScaling(ctx) }

// ProbeAlarms is not cached: Save & test must see the permissions as they are now.
func (c *cached) ProbeAlarms(ctx context.Context) error { return c.api.ProbeAlarms(ctx) }

// ProbeInventory is not cached, like ProbeAlarms.
func (c *cached) ProbeInventory(ctx context.Context) error { return c.api.ProbeInventory(ctx) }

// CloseIdleConnections passes Dispose on to the wrapped API.
func (c *cached) CloseIdleConnections() {
	if cl, ok := c.api.(interface{ CloseIdleConnections() }); ok {
		cl.CloseIdleConnections()
	}
}

func lenOf[T any](s []T) int { return 1 + len(s) }

// keepFor keeps every answer for d.
func keepFor[T any](d time.Duration) func(T) time.Duration { return func(T) time.Duration { return d } }

func get[T any](ctx context.Context, c *cached, key string, w wire[T], ttl func(T) time.Duration, size func(T) int, fetch func(context.Context) (T, error)) (T, error) {
	var zero T
	for {
		c.mu.Lock()
		e := c.entries[key]
		if e != nil && e.ready() && !c.now().Before(e.expires) {
			c.drop(key, e)
			e = nil
		}
		if e == nil {
			e = &entry{done: make(chan struct{})}
			c.entries[key] = e
			c.mu.Unlock()
			return fill(ctx, c, key, e, w, ttl, size, fetch)
		}
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		if e.err == nil {
			return e.val.(T), nil
		}
		// The call that ended with its caller's context says nothing about ours: make our own.
		if ctx.Err() != nil || !(errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded)) {
			return zero, e.err
		}
	}
}

// fill makes the call for the entry (or reads another replica's answer) and publishes the
// result to those waiting.
func fill[T any](ctx context.Context, c *cached, key string, e *entry, w wire[T], ttl func(T) time.Duration, size func(T) int, fetch func(context.Context) (T, error)) (T, error) {
	finished := false
	defer func() {
		if !finished { // fetch panicked: the panic goes on to our caller, the waiting ones must not hang
			c.mu.Lock()
			e.err = errShared
			c.drop(key, e)
			c.mu.Unlock()
			close(e.done)
		}
	}()
	v, born, err := load(ctx, c, key, w, ttl, fetch)
	finished = true

	c.mu.Lock()
	e.val, e.err = v, err
	// Kept until its keep from when it was fetched: another replica's answer is as old here.
	expires := born.Add(ttl(v))
	keep := err == nil && ttl(v) > 0 && c.now().Before(expires)
	if keep {
		// An answer larger than the bound on its own is not kept.
		n := size(v)
		keep = n <= maxCacheItems
		if keep {
			e.expires, e.items = expires, n
			c.items += n
			c.evict()
		}
	}
	if !keep {
		c.drop(key, e)
	}
	close(e.done)
	c.mu.Unlock()
	return v, err
}

func (e *entry) ready() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// drop forgets e if it is still key's entry; c.mu is held.
func (c *cached) drop(key string, e *entry) {
	if c.entries[key] == e {
		delete(c.entries, key)
		c.items -= e.items
	}
}

// evict keeps the bounds: expired entries first, then those expiring soonest. Entries
// with items are the filled ones (the one just filled too, before its done is closed);
// c.mu is held.
func (c *cached) evict() {
	now := c.now()
	for key, e := range c.entries {
		if e.items > 0 && !now.Before(e.expires) {
			c.drop(key, e)
		}
	}
	for len(c.entries) > maxCacheEntries || c.items > maxCacheItems {
		var (
			victim string
			oldest *entry
		)
		for key, e := range c.entries {
			if e.items > 0 && (oldest == nil || e.expires.Before(oldest.expires)) {
				victim, oldest = key, e
			}
		}
		if oldest == nil {
			return // only calls in flight
		}
		c.drop(victim, oldest)
	}
}
