package sharedstore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

var queryBudget = BudgetKey{Account: "123456789012", Region: "us-east-1", Kind: "query"}

// TestAllowSharesTheBurst: replicas draw on one budget: what one spends, the others lack.
func TestAllowSharesTheBurst(t *testing.T) {
	topologies(t, func(t *testing.T, replica func() *Store) {
		a, b := replica(), replica()
		ctx := context.Background()
		slow := Rate{PerSecond: 0.01, Burst: 5} // refills one call per 100 s: none during the test
		for i := range 3 {
			d, err := a.Allow(ctx, queryBudget, slow, 1)
			require.NoError(t, err)
			assert.True(t, d.Allowed)
			assert.Equal(t, 4-i, d.Remaining)
		}
		d, err := b.Allow(ctx, queryBudget, slow, 2)
		require.NoError(t, err)
		assert.True(t, d.Allowed, "two left of the shared burst")
		d, err = b.Allow(ctx, queryBudget, slow, 1)
		require.NoError(t, err)
		assert.False(t, d.Allowed, "the burst is spent across both replicas")
		assert.Greater(t, d.RetryAfter, 90*time.Second)
		assert.LessOrEqual(t, d.RetryAfter, 100*time.Second)

		// Other accounts, regions and kinds have budgets of their own.
		for _, other := range []BudgetKey{
			{Account: "210987654321", Region: "us-east-1", Kind: "query"},
			{Account: "123456789012", Region: "eu-west-1", Kind: "query"},
			{Account: "123456789012", Region: "us-east-1", Kind: "discovery"},
		} {
			d, err := a.Allow(ctx, other, slow, 5)
			require.NoError(t, err)
			assert.True(t, d.Allowed, "%+v", other)
		}
	})
}

// TestAllowNeverOverAdmits: sixteen callers on four replicas spend as fast as they can; the
// calls allowed never exceed the burst plus the rate times the time they ran.
func TestAllowNeverOverAdmits(t *testing.T) {
	srv := storetest.Start(t)
	rate := Rate{PerSecond: 200, Burst: 10}
	var allowed, denied atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(300 * time.Millisecond)
	for range 4 {
		st := openStore(t, srv.Addr)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					d, err := st.Allow(context.Background(), queryBudget, rate, 1)
					if !assert.NoError(t, err) {
						return
					}
					if d.Allowed {
						allowed.Add(1)
					} else {
						denied.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	ran := time.Since(start)
	limit := int64(rate.Burst) + int64(rate.PerSecond*ran.Seconds()) + 1
	assert.LessOrEqual(t, allowed.Load(), limit, "allowed %d in %s", allowed.Load(), ran)
	assert.GreaterOrEqual(t, allowed.Load(), int64(rate.Burst), "at least the burst passes")
	assert.Positive(t, denied.Load(), "the callers asked for more than the budget")
}

func TestRefusesBadInput(t *testing.T) {
	st := &Store{}
	for _, tc := range []struct {
		r    Rate
		cost int
	}{{Rate{0, 1}, 1}, {Rate{1, 0}, 1}, {Rate{1, 5}, 0}, {Rate{1, 5}, 6}} {
		_, err := st.Allow(context.Background(), queryBudget, tc.r, tc.cost)
		require.Error(t, err, "%+v", tc)
		assert.False(t, IsUnavailable(err), "bad input is the caller's error, not the store's")
	}
	_, _, err := st.AcquireSlot(context.Background(), queryBudget, 0, time.Second)
	assert.Error(t, err)
	// Durations the store counts in ms: 0 would mean an entry or a lease that never expires.
	ctx := context.Background()
	_, _, slotErr := st.AcquireSlot(ctx, queryBudget, 1, 0)
	_, leaseErr := st.Acquire(ctx, "k", time.Microsecond)
	_, onceErr := st.Once(ctx, "k", Fill{TTL: time.Minute, Lease: time.Minute}, nil)
	for name, err := range map[string]error{"Set": st.Set(ctx, "k", nil, 0), "slot": slotErr, "lease": leaseErr, "Once": onceErr} {
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "at least 1ms", name)
		assert.False(t, IsUnavailable(err), name)
	}
}

// TestSlots: concurrency slots are shared across replicas, freed on release, and freed
// by their lease when a replica dies holding them.
func TestSlots(t *testing.T) {
	topologies(t, func(t *testing.T, replica func() *Store) {
		a, b := replica(), replica()
		ctx := context.Background()
		var held []*Slot
		for _, st := range []*Store{a, b, a} {
			s, _, err := st.AcquireSlot(ctx, queryBudget, 3, time.Minute)
			require.NoError(t, err)
			require.NotNil(t, s)
			held = append(held, s)
		}
		s, wait, err := b.AcquireSlot(ctx, queryBudget, 3, time.Minute)
		require.NoError(t, err)
		assert.Nil(t, s, "three of three taken across replicas")
		assert.Greater(t, wait, 50*time.Second)
		assert.LessOrEqual(t, wait, time.Minute)

		require.NoError(t, held[1].Release(ctx))
		s, _, err = b.AcquireSlot(ctx, queryBudget, 3, time.Minute)
		require.NoError(t, err)
		require.NotNil(t, s, "a released slot is free")

		// A replica dies holding a slot of a short lease: it frees itself.
		dying := replica()
		other := BudgetKey{Account: "123456789012", Region: "us-east-1", Kind: "discovery"}
		d, _, err := dying.AcquireSlot(ctx, other, 1, 100*time.Millisecond)
		require.NoError(t, err)
		require.NotNil(t, d)
		require.NoError(t, dying.Close())
		s, wait, err = a.AcquireSlot(ctx, other, 1, time.Minute)
		require.NoError(t, err)
		require.Nil(t, s)
		time.Sleep(wait + 5*time.Millisecond) // the time the store says the lease has left
		s, _, err = a.AcquireSlot(ctx, other, 1, time.Minute)
		require.NoError(t, err)
		assert.NotNil(t, s, "the dead replica's slot expired")
	})
}

// TestBudgetWithoutStore: the caller learns the store cannot decide, so that it uses its
// local limiter at a conservative share.
func TestBudgetWithoutStore(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr, func(s *Settings) { s.Timeout = DefaultTimeout })
	srv.Stop()
	_, err := st.Allow(context.Background(), queryBudget, Rate{PerSecond: 300, Burst: 300}, 1)
	assert.True(t, IsUnavailable(err), "%v", err)
	_, _, err = st.AcquireSlot(context.Background(), queryBudget, 30, time.Minute)
	assert.True(t, IsUnavailable(err), "%v", err)
}
