package sharedstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// topologies runs a test against one node and against a Redis Cluster, where a script
// whose keys are in different slots fails (CROSSSLOT).
func topologies(t *testing.T, test func(t *testing.T, replica func() *Store)) {
	for _, topo := range []struct {
		name    string
		start   func(testing.TB) *storetest.Server
		cluster bool
	}{
		{"one node", func(t testing.TB) *storetest.Server { return storetest.Start(t) }, false},
		{"cluster", storetest.StartCluster, true},
	} {
		t.Run(topo.name, func(t *testing.T) {
			srv := topo.start(t)
			test(t, func() *Store {
				return openStore(t, srv.Addr, func(s *Settings) { s.Cluster = topo.cluster })
			})
		})
	}
}

var testFill = Fill{TTL: time.Minute, Lease: 10 * time.Second, Wait: 10 * time.Second, Poll: 5 * time.Millisecond}

// TestOnceOneFetchAcrossReplicas: four replicas, three panels each, miss the same entry at
// once: one fetches, every other reads its result (from the store or by waiting).
func TestOnceOneFetchAcrossReplicas(t *testing.T) {
	topologies(t, func(t *testing.T, replica func() *Store) {
		var fetches atomic.Int32
		release := make(chan struct{})
		fetch := func(ctx context.Context) ([]byte, error) {
			fetches.Add(1)
			<-release // hold the lease until every caller has asked
			return []byte("answer"), nil
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			outcomes = map[Outcome]int{}
			asked    sync.WaitGroup
		)
		for range 4 {
			st := replica()
			for range 3 {
				wg.Add(1)
				asked.Add(1)
				go func() {
					defer wg.Done()
					asked.Done()
					r, err := st.Once(context.Background(), "test:{e1}", testFill, fetch)
					assert.NoError(t, err)
					assert.NoError(t, r.StoreErr)
					assert.Equal(t, "answer", string(r.Value))
					mu.Lock()
					outcomes[r.Outcome]++
					mu.Unlock()
				}()
			}
		}
		asked.Wait()
		time.Sleep(20 * time.Millisecond) // let the callers reach the store; the result does not depend on it
		close(release)
		wg.Wait()
		assert.Equal(t, int32(1), fetches.Load(), "one upstream fetch for twelve callers on four replicas")
		assert.Equal(t, 1, outcomes[Fetched])
		assert.Equal(t, 11, outcomes[FromHolder]+outcomes[FromStore], "%v", outcomes)
	})
}

// TestHolderFails: a holder whose fetch fails releases the lease at once; a waiter sees the
// holder gone (not its wait running out) and fetches itself.
func TestHolderFails(t *testing.T) {
	topologies(t, func(t *testing.T, replica func() *Store) {
		a, b := replica(), replica()
		ctx := context.Background()
		lease, err := a.Acquire(ctx, "test:{e2}", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, lease)
		again, err := b.Acquire(ctx, "test:{e2}", time.Minute)
		require.NoError(t, err)
		assert.Nil(t, again, "one holder at a time")

		waited := make(chan WaitOutcome)
		go func() {
			_, w, err := b.Await(ctx, "test:{e2}", time.Minute, 5*time.Millisecond)
			assert.NoError(t, err)
			waited <- w
		}()
		require.NoError(t, lease.Release(ctx))
		assert.Equal(t, WaitHolderGone, <-waited)

		boom := errors.New("upstream 503")
		r, err := a.Once(ctx, "test:{e3}", testFill, func(context.Context) ([]byte, error) { return nil, boom })
		assert.ErrorIs(t, err, boom, "the fetch's own error is the caller's")
		assert.Equal(t, Fetched, r.Outcome)
		r, err = b.Once(ctx, "test:{e3}", testFill, func(context.Context) ([]byte, error) { return []byte("b's"), nil })
		require.NoError(t, err)
		assert.Equal(t, Fetched, r.Outcome, "the failed holder left no lease behind")
	})
}

// TestCrashedHolder: a replica that dies holding a lease blocks the others only until the
// lease expires; a wait bounded shorter than the lease ends as expired.
func TestCrashedHolder(t *testing.T) {
	topologies(t, func(t *testing.T, replica func() *Store) {
		crashed, b := replica(), replica()
		ctx := context.Background()
		l, err := crashed.Acquire(ctx, "test:{e4}", 300*time.Millisecond)
		require.NoError(t, err)
		require.NotNil(t, l)

		_, w, err := b.Await(ctx, "test:{e4}", 10*time.Millisecond, 5*time.Millisecond)
		require.NoError(t, err)
		assert.Equal(t, WaitExpired, w, "the bounded wait ends while the lease is held")

		require.NoError(t, crashed.Close()) // dies without releasing
		_, w, err = b.Await(ctx, "test:{e4}", time.Minute, 5*time.Millisecond)
		require.NoError(t, err)
		assert.Equal(t, WaitHolderGone, w, "the lease's expiry frees the key")
		mine, err := b.Acquire(ctx, "test:{e4}", time.Minute)
		require.NoError(t, err)
		assert.NotNil(t, mine)
	})
}

// TestReleaseOnlyByHolder: a holder whose lease expired and was taken by another cannot
// release the new holder's.
func TestReleaseOnlyByHolder(t *testing.T) {
	topologies(t, func(t *testing.T, replica func() *Store) {
		a, b, c := replica(), replica(), replica()
		ctx := context.Background()
		old, err := a.Acquire(ctx, "test:{e5}", 50*time.Millisecond)
		require.NoError(t, err)
		require.NotNil(t, old)
		var cur *Lease
		for cur == nil { // until a's lease has expired
			cur, err = b.Acquire(ctx, "test:{e5}", time.Minute)
			require.NoError(t, err)
			time.Sleep(5 * time.Millisecond)
		}
		require.NoError(t, old.Release(ctx))
		third, err := c.Acquire(ctx, "test:{e5}", time.Minute)
		require.NoError(t, err)
		assert.Nil(t, third, "b's lease survives a's late release")
		require.NoError(t, cur.Release(ctx))
		third, err = c.Acquire(ctx, "test:{e5}", time.Minute)
		require.NoError(t, err)
		assert.NotNil(t, third)
	})
}

// TestOnceWithoutStore: a store that is down never fails the call: the caller fetches
// itself and is told why.
func TestOnceWithoutStore(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr, func(s *Settings) { s.Timeout = DefaultTimeout })
	srv.Stop()
	fetches := 0
	r, err := st.Once(context.Background(), "test:{e6}", testFill, func(context.Context) ([]byte, error) {
		fetches++
		return []byte("local"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, fetches)
	assert.Equal(t, FetchedSelf, r.Outcome)
	assert.Equal(t, "local", string(r.Value))
	assert.True(t, IsUnavailable(r.StoreErr), "%v", r.StoreErr)
}

func TestOnceKeysAcrossEntries(t *testing.T) {
	// Different entries do not wait on each other's leases.
	topologies(t, func(t *testing.T, replica func() *Store) {
		st := replica()
		ctx := context.Background()
		l, err := st.Acquire(ctx, "test:{busy}", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, l)
		for i := range 3 {
			key := "test:{free" + strconv.Itoa(i) + "}"
			r, err := st.Once(ctx, key, testFill, func(context.Context) ([]byte, error) { return []byte(key), nil })
			require.NoError(t, err)
			assert.Equal(t, Fetched, r.Outcome)
			v, ok, err := st.Get(ctx, key)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, key, string(v), "published under its own key")
		}
	})
}

// TestStoreLostDuringFetch: the store goes away while the lease holder fetches: the
// caller still gets its value, told the store failed; once the store is back (empty,
// after the backoff) the entry is fetched and shared again.
func TestStoreLostDuringFetch(t *testing.T) {
	srv := storetest.Start(t)
	st, clock := faultStore(t, srv.Addr)
	ctx := context.Background()
	r, err := st.Once(ctx, "test:{e7}", testFill, func(context.Context) ([]byte, error) {
		srv.Stop()
		return []byte("fetched"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, Fetched, r.Outcome)
	assert.Equal(t, "fetched", string(r.Value))
	assert.True(t, IsUnavailable(r.StoreErr), "%v", r.StoreErr)

	srv.Restart()
	clock.Add(maxBackoff)
	r, err = st.Once(ctx, "test:{e7}", testFill, func(context.Context) ([]byte, error) { return []byte("again"), nil })
	require.NoError(t, err)
	assert.Equal(t, Fetched, r.Outcome)
	assert.NoError(t, r.StoreErr)
	r, err = openStore(t, srv.Addr).Once(ctx, "test:{e7}", testFill, func(context.Context) ([]byte, error) { return nil, errors.New("not called") })
	require.NoError(t, err)
	assert.Equal(t, FromStore, r.Outcome)
	assert.Equal(t, "again", string(r.Value))
}
