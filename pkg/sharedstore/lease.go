package sharedstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease is one replica's claim to fetch an entry. It ends when released, or when its time
// runs out (a replica that crashed while holding it).
type Lease struct {
	st         *Store
	key, token string
}

// A compare-and-delete: only the holder's token releases, so a holder whose lease expired
// (and was taken by another) cannot end the new holder's.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`)

// publishScript stores the result and releases the lease in one step, so a waiter never
// sees the lease gone before the result is there.
var publishScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if redis.call('GET', KEYS[2]) == ARGV[1] then
	redis.call('DEL', KEYS[2])
end
return 1`)

// claimScript reads the entry or, when it is absent, takes its lease, in one step: a
// replica that missed just before the holder published would otherwise take the freed
// lease and fetch again. Replies {1, value}, {2} (lease taken) or {0} (held by another).
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
	return {1, v}
end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return {2}
end
return {0}`)

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// Acquire takes the lease on the entry at key for ttl: nil (and no error) when another
// replica holds it.
func (st *Store) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lease, error) {
	if err := atLeastMs("lease", ttl); err != nil {
		return nil, err
	}
	l := &Lease{st: st, key: LeaseKey(key), token: newToken()}
	var got bool
	err := st.do(ctx, "SET NX", func(ctx context.Context) (err error) {
		got, err = st.rdb.SetNX(ctx, l.key, l.token, ttl).Result()
		return err
	})
	if err != nil || !got {
		return nil, err
	}
	return l, nil
}

// Release ends the lease if this replica still holds it.
func (l *Lease) Release(ctx context.Context) error {
	_, err := l.st.run(ctx, "release lease", releaseScript, []string{l.key}, l.token)
	return err
}

// Publish stores the entry's value (the lease's key without its suffix) for ttl and
// releases the lease.
func (l *Lease) Publish(ctx context.Context, val []byte, ttl time.Duration) error {
	_, err := l.st.run(ctx, "publish", publishScript, []string{l.entryKey(), l.key}, l.token, val, ttl.Milliseconds())
	return err
}

// entryKey is the key of the entry the lease is on.
func (l *Lease) entryKey() string { return l.key[:len(l.key)-len(":lease")] }

// WaitOutcome says how Await ended.
type WaitOutcome string

const (
	WaitGot        WaitOutcome = "got"         // the holder's result arrived
	WaitHolderGone WaitOutcome = "holder gone" // the lease ended without a result: the holder failed or crashed
	WaitExpired    WaitOutcome = "expired"     // the bounded wait ran out while the lease was held
	WaitStoreDown  WaitOutcome = "store down"  // the store failed while waiting (Await's error says why)
)

// Await waits at most maxWait, polling every poll, for the value the lease holder of the
// entry at key publishes. Any outcome but WaitGot means: fetch it yourself.
func (st *Store) Await(ctx context.Context, key string, maxWait, poll time.Duration) ([]byte, WaitOutcome, error) {
	if err := atLeastMs("poll", poll); err != nil {
		return nil, WaitStoreDown, err
	}
	lkey := LeaseKey(key)
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		var vals []any
		// One MGET reads both: they share a hash tag, so a cluster serves it from one node.
		err := st.do(ctx, "MGET", func(ctx context.Context) (err error) {
			vals, err = st.rdb.MGet(ctx, key, lkey).Result()
			return err
		})
		switch {
		case err != nil:
			return nil, WaitStoreDown, err
		case vals[0] != nil:
			s, _ := vals[0].(string)
			return []byte(s), WaitGot, nil
		case vals[1] == nil:
			return nil, WaitHolderGone, nil
		}
		select {
		case <-ctx.Done():
			return nil, WaitStoreDown, ctx.Err()
		case <-deadline.C:
			return nil, WaitExpired, nil
		case <-tick.C:
		}
	}
}

// Fill configures Once.
type Fill struct {
	TTL   time.Duration // how long the stored value lives
	Lease time.Duration // how long a holder may take before others fetch themselves
	Wait  time.Duration // how long a replica waits for the holder's result
	Poll  time.Duration // how often a waiting replica looks
}

// Outcome says how Once served a value.
type Outcome string

const (
	FromStore   Outcome = "store"        // it was stored already
	Fetched     Outcome = "fetched"      // this replica held the lease and fetched it
	FromHolder  Outcome = "from holder"  // another replica fetched it; this one waited
	FetchedSelf Outcome = "fetched self" // fetched without the lease: the wait ended without a result, or the store failed
)

// OnceResult is Once's answer. StoreErr is the store's failure, if any: the value was then
// fetched locally and the caller shows its notice.
type OnceResult struct {
	Value    []byte
	Outcome  Outcome
	Wait     WaitOutcome // how the wait ended, for FromHolder and FetchedSelf after a wait
	StoreErr error
}

// Once serves the entry at key so that, of the replicas that miss it at once, one fetches
// and the others read its result. A failing store never fails the call: fetch runs locally
// and StoreErr says why. Only fetch's own error is returned as an error.
func (st *Store) Once(ctx context.Context, key string, f Fill, fetch func(context.Context) ([]byte, error)) (OnceResult, error) {
	if err := errors.Join(atLeastMs("TTL", f.TTL), atLeastMs("lease", f.Lease), atLeastMs("poll", f.Poll)); err != nil {
		return OnceResult{}, fmt.Errorf("fill settings: %w", err)
	}
	self := func(r OnceResult) (OnceResult, error) {
		v, err := fetch(ctx)
		if err != nil {
			return r, err
		}
		r.Value, r.Outcome = v, FetchedSelf
		if r.StoreErr == nil {
			r.StoreErr = st.Set(ctx, key, v, f.TTL)
		}
		return r, nil
	}
	l := &Lease{st: st, key: LeaseKey(key), token: newToken()}
	res, err := st.run(ctx, "claim", claimScript, []string{key, l.key}, l.token, f.Lease.Milliseconds())
	if err != nil {
		return self(OnceResult{StoreErr: err})
	}
	arr, _ := res.([]any)
	state := int64(-1)
	if len(arr) > 0 {
		state, _ = arr[0].(int64)
	}
	switch {
	case state == 1 && len(arr) == 2:
		v, _ := arr[1].(string)
		return OnceResult{Value: []byte(v), Outcome: FromStore}, nil
	case state == 2:
		v, err := fetch(ctx)
		if err != nil {
			// Released at once: the waiters fetch themselves instead of waiting it out.
			_ = l.Release(context.WithoutCancel(ctx))
			return OnceResult{Outcome: Fetched}, err
		}
		return OnceResult{Value: v, Outcome: Fetched, StoreErr: l.Publish(ctx, v, f.TTL)}, nil
	case state != 0:
		return self(OnceResult{StoreErr: st.set.classify("claim", st.addr(), fmt.Errorf("unexpected script reply %v", res))})
	}
	v, w, err := st.Await(ctx, key, f.Wait, f.Poll)
	if w == WaitGot {
		return OnceResult{Value: v, Outcome: FromHolder, Wait: w}, nil
	}
	if ctx.Err() != nil {
		return OnceResult{Wait: w}, ctx.Err()
	}
	return self(OnceResult{Wait: w, StoreErr: err})
}
