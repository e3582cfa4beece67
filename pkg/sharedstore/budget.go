package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Rate is a limit on calls per second with a burst: CloudWatch's 300 query TPS, 10
// discovery TPS, or the share of them a data source may use.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Decision is the limiter's answer.
type Decision struct {
	Allowed    bool
	RetryAfter time.Duration // when not allowed: when the cost would be
	Remaining  int           // when allowed: calls of cost 1 still allowed at once
}

// gcraScript is the generic cell rate algorithm: the key holds the theoretical arrival time
// (TAT, µs of the server's clock, so the replicas' clocks do not matter). A call of cost n
// is allowed when TAT + n·interval − burst·interval is not in the future. Atomic because a
// script runs alone; one key, so it runs on any cluster node.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval * cost
local allow_at = new_tat - interval * burst
if allow_at > now then
	return {0, math.ceil(allow_at - now), 0}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {1, 0, math.floor((now - allow_at) / interval)}`)

// Allow spends cost from the account's budget b at rate r, shared by every replica and
// data source using the same store. An *Error means the store cannot decide: the caller
// uses its local limiter at a conservative share.
func (st *Store) Allow(ctx context.Context, b BudgetKey, r Rate, cost int) (Decision, error) {
	if r.PerSecond <= 0 || r.Burst < 1 || cost < 1 || cost > r.Burst {
		return Decision{}, fmt.Errorf("rate %g/s, burst %d, cost %d: the rate must be positive and the cost between 1 and the burst", r.PerSecond, r.Burst, cost)
	}
	key, err := b.key("rate")
	if err != nil {
		return Decision{}, err
	}
	interval := 1e6 / r.PerSecond
	res, err := st.run(ctx, "rate limit", gcraScript, []string{key}, interval, r.Burst, cost)
	if err != nil {
		return Decision{}, err
	}
	v, ok := ints(res, 3)
	if !ok {
		return Decision{}, st.set.classify("rate limit", st.addr(), fmt.Errorf("unexpected script reply %v", res))
	}
	return Decision{Allowed: v[0] == 1, RetryAfter: time.Duration(v[1]) * time.Microsecond, Remaining: int(v[2])}, nil
}

// ints reads a script's array reply of n integers.
func ints(res any, n int) ([]int64, bool) {
	arr, ok := res.([]any)
	if !ok || len(arr) != n {
		return nil, false
	}
	out := make([]int64, n)
	for i, x := range arr {
		if out[i], ok = x.(int64); !ok {
			return nil, false
		}
	}
	return out, true
}

// Slot is one of an account's concurrent calls, held until released or until its lease
// runs out: a replica that dies mid-call frees its slots after the lease.
type Slot struct {
	st         *Store
	key, token string
}

// slotScript takes a slot: it drops the slots whose lease ran out (score: expiry, ms of
// the server's clock), then adds this one if fewer than the limit are held. Denied, it
// returns when the first held slot expires.
var slotScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= limit then
	local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
	return {0, tonumber(first[2]) - now}
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
if redis.call('PTTL', KEYS[1]) < lease then
	redis.call('PEXPIRE', KEYS[1], lease)
end
return {1, 0}`)

// AcquireSlot takes one of limit concurrent slots of the account's budget b for at most
// lease: nil and the time until the first held slot's lease ends when all are taken.
func (st *Store) AcquireSlot(ctx context.Context, b BudgetKey, limit int, lease time.Duration) (*Slot, time.Duration, error) {
	s, taken, wait, err := st.acquireSlot(ctx, b, limit, lease)
	if !taken {
		return nil, wait, err
	}
	return s, 0, nil
}

// acquireSlot is AcquireSlot that, when the store failed after the script was sent, also
// returns the slot it asked for: a paused or slow store may still run the script, and
// only its token can give that slot back before its lease ends.
func (st *Store) acquireSlot(ctx context.Context, b BudgetKey, limit int, lease time.Duration) (s *Slot, taken bool, wait time.Duration, err error) {
	if limit < 1 || lease < time.Millisecond {
		return nil, false, 0, fmt.Errorf("slot limit %d, lease %s: use a limit of at least 1 and a lease of at least 1ms", limit, lease)
	}
	key, err := b.key("slots")
	if err != nil {
		return nil, false, 0, err
	}
	s = &Slot{st: st, key: key, token: newToken()}
	res, err := st.run(ctx, "slot", slotScript, []string{key}, s.token, limit, lease.Milliseconds())
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.RetryAt.IsZero() { // sent, not skipped by the backoff
			return s, false, 0, err
		}
		return nil, false, 0, err
	}
	v, ok := ints(res, 2)
	if !ok {
		return nil, false, 0, st.set.classify("slot", st.addr(), fmt.Errorf("unexpected script reply %v", res))
	}
	if v[0] != 1 {
		return nil, false, time.Duration(v[1]) * time.Millisecond, nil
	}
	return s, true, 0, nil
}

// Release frees the slot.
func (s *Slot) Release(ctx context.Context) error {
	return s.st.do(ctx, "release slot", func(ctx context.Context) error {
		return s.st.rdb.ZRem(ctx, s.key, s.token).Err()
	})
}
