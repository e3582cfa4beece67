package awsapi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// SharedCache is a store that the plugin's replicas share: rcache.Peer's Once, which
// pkg/sharedstore implements on Redis or Valkey (sharedstore.NewPeer), namespaced by data
// source and credential identity. Once serves the value name from the store, or calls
// fetch (at most once, before it returns) when this replica is the one to fetch it across
// replicas, and stores its bytes for ttl; storeErr is the store's failure (the value was
// then fetched here), err is fetch's own.
type SharedCache interface {
	Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) (val []byte, shared bool, storeErr, err error)
}

// CacheOption changes a cache built by Cached, CachedPrices or CachedChanges.
type CacheOption func(*cached)

// ShareThrough makes the cache's local misses go through sc, so that of the replicas
// missing an answer at once one calls AWS and the others read its answer; each keeps it
// locally by the same rule, counted from when it was fetched. region is the region the
// cache's client answers for: with the call's parameters it names the shared entries. A
// nil sc changes nothing.
func ShareThrough(sc SharedCache, region string) CacheOption {
	return func(c *cached) {
		if sc != nil {
			c.share = &share{sc: sc, prefix: sharedName + region + "\x00", keeps: map[string]time.Duration{}}
		}
	}
}

// sharedName starts every entry name: it keeps the entries apart from the results cache's
// in the same namespace, and replicas of another encoding version apart from these.
const sharedName = "awsapi/v1\x00"

// ShareStats is what a cache saw of the shared store.
type ShareStats struct {
	FromStore int64 // answers another replica fetched, read from the store
	// Rejected counts entries read but not used: malformed, of another version or kind, or
	// older than the answer's keep (each then fetched here, from AWS).
	Rejected int64
	// StoreErr is the store's last failure; nil after an operation that succeeded, or
	// without a store.
	StoreErr error
}

// Sharing is implemented by the caches Cached, CachedPrices and CachedChanges return, so
// the plugin can show the store's failure once.
type Sharing interface{ ShareStats() ShareStats }

// share is a cache's part of the shared store.
type share struct {
	sc     SharedCache
	prefix string

	fromStore, rejected atomic.Int64
	lastErr             atomic.Pointer[error]

	mu sync.Mutex
	// keeps is the last keep of each key's answer: how long the store keeps the next one,
	// as an alarms answer's keep is known only once it is read.
	keeps map[string]time.Duration
}

// maxKeeps bounds share.keeps; history keys move with the time range, so it is emptied
// when full rather than kept exact.
const maxKeeps = 4 * maxCacheEntries

func (s *share) stats() ShareStats {
	st := ShareStats{FromStore: s.fromStore.Load(), Rejected: s.rejected.Load()}
	if p := s.lastErr.Load(); p != nil {
		st.StoreErr = *p
	}
	return st
}

func (s *share) noteStore(err error) {
	if err == nil {
		s.lastErr.Store(nil)
		return
	}
	s.lastErr.Store(&err)
}

func (s *share) keep(key string, guess time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.keeps[key]; ok {
		return d
	}
	return guess
}

func (s *share) learn(key string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keeps[key]; !ok && len(s.keeps) >= maxKeeps {
		clear(s.keeps)
	}
	s.keeps[key] = d
}

// ShareStats implements Sharing.
func (c *cached) ShareStats() ShareStats {
	if c.share == nil {
		return ShareStats{}
	}
	return c.share.stats()
}

// load calls fetch, through the shared store when the cache has one; born is when the
// answer was fetched, by whichever replica, and its keep runs from then.
func load[T any](ctx context.Context, c *cached, key string, w wire[T], keep func(T) time.Duration, fetch func(context.Context) (T, error)) (T, time.Time, error) {
	s := c.share
	var zero T
	// An answer not kept is not stored either (ttl 0).
	ttl := time.Duration(0)
	if s != nil {
		ttl = s.keep(key, keep(zero))
	}
	if ttl <= 0 {
		v, err := fetch(ctx)
		return v, c.now(), err
	}
	var (
		ran      bool
		v        T
		born     time.Time
		fetchErr error
	)
	val, _, storeErr, err := s.sc.Once(ctx, s.prefix+key, ttl, func(ctx context.Context) ([]byte, error) {
		ran = true
		v, fetchErr = fetch(ctx)
		born = c.now()
		if fetchErr != nil {
			return nil, fetchErr
		}
		b, encErr := encode(w, v, born)
		if encErr != nil {
			return nil, errUnshareable
		}
		return b, nil
	})
	if ran {
		// Our own fetch: its answer as it came, whatever the store did with it.
		s.noteStore(storeErr)
		if fetchErr == nil {
			s.learn(key, keep(v))
		}
		return v, born, fetchErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return zero, time.Time{}, err
		}
		// fetch was not called, so the error is the store's.
		storeErr = err
	}
	s.noteStore(storeErr)
	if storeErr == nil {
		got, at, decErr := decode(w, val)
		now := c.now()
		if at.After(now) { // a replica's clock ahead of ours gains its answer no time
			at = now
		}
		born = at
		if decErr == nil && now.Before(born.Add(keep(got))) {
			s.fromStore.Add(1)
			s.learn(key, keep(got))
			return got, born, nil
		}
		s.rejected.Add(1)
	}
	if v, err = fetch(ctx); err == nil {
		s.learn(key, keep(v))
	}
	return v, c.now(), err
}

// errUnshareable is what the fetch given to Once returns for an answer that cannot be
// encoded: the store keeps nothing and the answer is served as fetched.
var errUnshareable = errors.New("awsapi: the answer cannot be shared")
