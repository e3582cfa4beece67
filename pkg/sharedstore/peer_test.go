package sharedstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry/entrytest"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

var _ rcache.Peer = (*Peer)(nil)

func mustEncode(t *testing.T, e entry.Extent) []byte {
	t.Helper()
	b, err := entry.Encode(e)
	require.NoError(t, err)
	return b
}

func testPeer(t *testing.T, st *Store, uid string) *Peer {
	t.Helper()
	ns, err := NewNamespace("test:", 1, uid, Identity{Account: "123456789012", Region: "us-east-1"})
	require.NoError(t, err)
	return NewPeer(st, ns)
}

// TestPeerClaimPublishAwait: one replica claims and publishes an extent; another finds the
// claim held, waits for it to end and reads what was published.
func TestPeerClaimPublishAwait(t *testing.T) {
	srv := storetest.Start(t)
	a, b := testPeer(t, openStore(t, srv.Addr), "ds1"), testPeer(t, openStore(t, srv.Addr), "ds1")
	ctx := context.Background()
	e := entrytest.Extent(1, 2, 30)

	_, ok, err := b.GetExtent(ctx, "x")
	require.NoError(t, err)
	assert.False(t, ok, "nothing published yet")
	c, err := a.Claim(ctx, "x", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, c)
	other, err := b.Claim(ctx, "x", time.Minute)
	require.NoError(t, err)
	assert.Nil(t, other, "held by a")

	waited := make(chan error, 1)
	go func() { waited <- b.AwaitClaim(ctx, "x", 10*time.Second) }()
	time.Sleep(50 * time.Millisecond) // let b poll the held lease at least once
	require.NoError(t, c.Publish(ctx, e, time.Minute))
	require.NoError(t, <-waited)
	got, ok, err := b.GetExtent(ctx, "x")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, mustEncode(t, e), mustEncode(t, got), "the extent as published (compared encoded: NaN ≠ NaN)")

	// Released, the claim is free again; a refused extent releases it too.
	c, err = b.Claim(ctx, "y", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, c)
	bad := e
	bad.Step = 0
	assert.Error(t, c.Publish(ctx, bad, time.Minute))
	c, err = a.Claim(ctx, "y", time.Minute)
	require.NoError(t, err)
	assert.NotNil(t, c, "the refused publish released the lease")
	require.NoError(t, c.Release(ctx))
	require.NoError(t, a.AwaitClaim(ctx, "y", 10*time.Second))
}

// TestPeerAwaitClaimBounded: a held claim is waited for at most maxWait.
func TestPeerAwaitClaimBounded(t *testing.T) {
	srv := storetest.Start(t)
	a, b := testPeer(t, openStore(t, srv.Addr), "ds1"), testPeer(t, openStore(t, srv.Addr), "ds1")
	ctx := context.Background()
	c, err := a.Claim(ctx, "x", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, c)
	t0 := time.Now()
	require.NoError(t, b.AwaitClaim(ctx, "x", 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(t0), 100*time.Millisecond, "returned only when maxWait passed")
	held, err := b.Claim(ctx, "x", time.Minute)
	require.NoError(t, err)
	assert.Nil(t, held, "still held after the wait")
}

// TestPeerNamespacesApart: two data sources (different uids or credentials) never read
// each other's extents or lookups, though they use the same names on one store.
func TestPeerNamespacesApart(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr)
	ctx := context.Background()
	other, err := NewNamespace("test:", 1, "ds1", Identity{Account: "123456789012", Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/other"})
	require.NoError(t, err)
	a := testPeer(t, st, "ds1")
	for name, b := range map[string]*Peer{"other uid": testPeer(t, st, "ds2"), "other credentials": NewPeer(st, other)} {
		t.Run(name, func(t *testing.T) {
			c, err := a.Claim(ctx, name, time.Minute)
			require.NoError(t, err)
			require.NotNil(t, c)
			require.NoError(t, c.Publish(ctx, entrytest.Extent(2, 1, 10), time.Minute))
			_, ok, err := b.GetExtent(ctx, name)
			require.NoError(t, err)
			assert.False(t, ok, "b read a's extent")
			_, ok, err = a.GetExtent(ctx, name)
			require.NoError(t, err)
			assert.True(t, ok, "a reads its own")

			_, shared, storeErr, err := a.Once(ctx, name, time.Minute, func(context.Context) ([]byte, error) { return []byte("a"), nil })
			require.NoError(t, errors.Join(storeErr, err))
			assert.False(t, shared)
			v, shared, storeErr, err := b.Once(ctx, name, time.Minute, func(context.Context) ([]byte, error) { return []byte("b"), nil })
			require.NoError(t, errors.Join(storeErr, err))
			assert.False(t, shared, "b's lookup came from a")
			assert.Equal(t, "b", string(v))
			v, shared, storeErr, err = testPeer(t, openStore(t, srv.Addr), "ds1").Once(ctx, name, time.Minute, func(context.Context) ([]byte, error) { return nil, errors.New("not called") })
			require.NoError(t, errors.Join(storeErr, err))
			assert.True(t, shared)
			assert.Equal(t, "a", string(v), "another replica of a reads a's")
		})
	}
}

// TestPeerStoreDown: every method reports the store's failure; Unavailable says why.
func TestPeerStoreDown(t *testing.T) {
	srv := storetest.Start(t)
	p := testPeer(t, openStore(t, srv.Addr), "ds1")
	srv.Stop()
	ctx := context.Background()
	_, _, err := p.GetExtent(ctx, "x")
	assert.True(t, IsUnavailable(err), "%v", err)
	assert.True(t, IsUnavailable(p.Unavailable()), "backing off: %v", p.Unavailable())
	_, err = p.Claim(ctx, "x", time.Minute)
	assert.True(t, IsUnavailable(err), "%v", err)
	assert.True(t, IsUnavailable(p.AwaitClaim(ctx, "x", time.Second)))
	v, shared, storeErr, err := p.Once(ctx, "x", time.Minute, func(context.Context) ([]byte, error) { return []byte("local"), nil })
	require.NoError(t, err)
	assert.True(t, IsUnavailable(storeErr), "%v", storeErr)
	assert.False(t, shared)
	assert.Equal(t, "local", string(v))
}

// TestPeerWithFill: a lookup slower than the waiters' wait is fetched again by each of
// them; WithFill's longer wait makes them read the holder's answer, and leaves the peer it
// came from as it was.
func TestPeerWithFill(t *testing.T) {
	srv := storetest.Start(t)
	base := testPeer(t, openStore(t, srv.Addr), "ds1")
	short := base.WithFill(time.Minute, 50*time.Millisecond)
	long := base.WithFill(time.Minute, 10*time.Second)
	assert.Equal(t, lookupWait, base.wait, "WithFill changed the peer it came from")
	for _, tc := range []struct {
		name        string
		p           *Peer
		wantFetches int32
	}{{"short wait", short, 2}, {"long wait", long, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var fetches atomic.Int32
			holding := make(chan struct{})
			fetch := func(context.Context) ([]byte, error) {
				if fetches.Add(1) == 1 {
					close(holding)
					time.Sleep(400 * time.Millisecond) // a paced sweep, shortened
				}
				return []byte("answer"), nil
			}
			ctx := context.Background()
			done := make(chan error, 1)
			go func() {
				_, _, storeErr, err := tc.p.Once(ctx, tc.name, time.Minute, fetch)
				done <- errors.Join(storeErr, err)
			}()
			<-holding
			v, _, storeErr, err := tc.p.Once(ctx, tc.name, time.Minute, fetch)
			require.NoError(t, errors.Join(storeErr, err))
			require.NoError(t, <-done)
			assert.Equal(t, "answer", string(v))
			assert.Equal(t, tc.wantFetches, fetches.Load())
		})
	}
}

// TestReviewLookupWaitPastDeadline: a lookup whose holder is slow (its call held by the
// account budget, say), asked by a request with 1 s left: the waiter gives up at half its
// time and fetches itself, instead of waiting into its deadline and failing; and a holder's
// lease is no longer than its request's time.
func TestReviewLookupWaitPastDeadline(t *testing.T) {
	srv := storetest.Start(t)
	a, b := testPeer(t, openStore(t, srv.Addr), "ds1"), testPeer(t, openStore(t, srv.Addr), "ds1")
	hold, holding, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, _, _, _ = a.Once(ctx, "labels", time.Minute, func(context.Context) ([]byte, error) {
			close(holding)
			<-hold
			return []byte("holder"), nil
		})
	}()
	<-holding
	lease, err := a.st.rdb.PTTL(context.Background(), LeaseKey(a.ns.Key("lookup", "labels"))).Result()
	require.NoError(t, err)
	assert.True(t, lease > 0 && lease <= 3*time.Second, "the holder's lease %s, its request's time 3s", lease)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, shared, storeErr, err := b.Once(ctx, "labels", time.Minute, func(context.Context) ([]byte, error) { return []byte("self"), nil })
	close(hold)
	<-done
	require.NoError(t, err, "a self-fetch had time")
	assert.NoError(t, storeErr)
	assert.False(t, shared)
	assert.Equal(t, "self", string(v))
}
