package sharedstore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

var account = Identity{Account: "123456789012", Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/grafana"}

func newBudget(t *testing.T, st *Store, id Identity, l AccountLimits, share float64) *Budget {
	t.Helper()
	b, err := NewBudget(st, id, l, share)
	require.NoError(t, err)
	return b
}

// TestBudgetLimits: the share of CloudWatch's limits, rounded down, never above the share
// in any one-second window.
func TestBudgetLimits(t *testing.T) {
	for _, tc := range []struct {
		share           float64
		class           promclient.Class
		burst, perSec   int // window: burst + perSec − 1
		wantConc, wantN int
	}{
		{0.8, promclient.ClassQuery, 24, 217, 24, 240},
		{0.8, promclient.ClassDiscovery, 1, 8, 24, 8},
		{0.57, promclient.ClassQuery, 17, 155, 17, 171},
		{1, promclient.ClassDiscovery, 1, 10, 30, 10},
		{0.01, promclient.ClassDiscovery, 1, 1, 1, 1}, // never below one call and one slot
	} {
		b := newBudget(t, &Store{}, account, AccountLimits{}, tc.share)
		r, conc := b.Limits(tc.class)
		assert.Equal(t, Rate{PerSecond: float64(tc.perSec), Burst: tc.burst}, r, "%+v", tc)
		assert.Equal(t, tc.wantConc, conc, "%+v", tc)
		assert.Equal(t, tc.wantN, r.Burst+int(r.PerSecond)-1, "%+v: calls in one second", tc)
		// Sustained, the budget must not be much slower than the share (nor than the
		// fallback limits it replaces while the store is up).
		assert.GreaterOrEqual(t, r.PerSecond, 0.9*float64(tc.wantN)-1, "%+v: sustained rate", tc)
	}
	// An account whose quota AWS raised.
	b := newBudget(t, &Store{}, account, AccountLimits{QueryTPS: 1000, QueryConcurrency: 100}, 0.5)
	r, conc := b.Limits(promclient.ClassQuery)
	assert.Equal(t, 500, r.Burst+int(r.PerSecond)-1)
	assert.Equal(t, 50, conc)
	_, conc = b.Limits(promclient.ClassDiscovery)
	assert.Equal(t, 15, conc, "unset limits keep CloudWatch's defaults")
}

func TestFallbackOf(t *testing.T) {
	f := FallbackOf(AccountLimits{}, 0.8, 0.25)
	assert.InDelta(t, 60, f.QueryRPS, 1e-9)
	assert.InDelta(t, 2, f.DiscoveryRPS, 1e-9)
	assert.Equal(t, 6, f.Concurrency)
	var o promclient.Options
	f.Apply(&o)
	assert.Equal(t, promclient.Options{FallbackRPS: f.QueryRPS, FallbackDiscoveryRPS: f.DiscoveryRPS, FallbackConcurrency: 6}, o)
	// Four replicas at the default fallback share together use the data source's share.
	assert.InDelta(t, 0.8*300, 4*f.QueryRPS, 1e-9)
}

func TestNewBudgetRefusesBadInput(t *testing.T) {
	st := &Store{}
	for _, tc := range []struct {
		st    *Store
		id    Identity
		share float64
		want  string
	}{
		{nil, account, 0.8, "no shared store"},
		{st, account, 0, "account share 0 is out of range"},
		{st, account, 1.5, "account share 1.5"},
		{st, Identity{Account: "123456789012"}, 0.8, `region ""`},
		{st, Identity{Account: "1234", Region: "us-east-1"}, 0.8, `account "1234" is not a 12-digit`},
		{st, Identity{Account: "{123456789012}", Region: "us-east-1"}, 0.8, "12-digit"},
	} {
		_, err := NewBudget(tc.st, tc.id, AccountLimits{}, tc.share)
		require.Error(t, err, "%+v", tc)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestBudgetSlotsNeverExceeded: sixteen callers on four replicas hold what they take for a
// moment: never more in flight than the budget's slots, and all of them used.
func TestBudgetSlotsNeverExceeded(t *testing.T) {
	srv := storetest.Start(t)
	limits := AccountLimits{QueryTPS: 100000, QueryConcurrency: 10} // slots are the bottleneck
	var inFlight, most, granted atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		b := newBudget(t, openStore(t, srv.Addr), account, limits, 0.5)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 15 {
					for {
						release, wait, err := b.Take(context.Background(), promclient.ClassQuery, 1)
						if !assert.NoError(t, err) {
							return
						}
						if release != nil {
							n := inFlight.Add(1)
							for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
							}
							time.Sleep(2 * time.Millisecond)
							inFlight.Add(-1)
							release()
							granted.Add(1)
							break
						}
						time.Sleep(wait)
					}
				}
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, int64(4*4*15), granted.Load())
	assert.LessOrEqual(t, most.Load(), int64(5), "at most 50% of 10 slots in flight")
	assert.Greater(t, most.Load(), int64(1), "the callers did run side by side")
}

// TestBudgetRateNeverOverAdmits: callers on four replicas take as fast as they can; the
// calls granted never exceed the burst plus the rate over the time they ran, and a denied
// rate gives its slot back (else the slots, not the rate, would deny).
func TestBudgetRateNeverOverAdmits(t *testing.T) {
	srv := storetest.Start(t)
	limits := AccountLimits{DiscoveryTPS: 100, DiscoveryConcurrency: 4}
	var granted, denied atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(400 * time.Millisecond)
	var r Rate
	for range 4 {
		b := newBudget(t, openStore(t, srv.Addr), account, limits, 0.5)
		r, _ = b.Limits(promclient.ClassDiscovery)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					release, _, err := b.Take(context.Background(), promclient.ClassDiscovery, 1)
					if !assert.NoError(t, err) {
						return
					}
					if release == nil {
						denied.Add(1)
						continue
					}
					granted.Add(1)
					release()
				}
			}()
		}
	}
	wg.Wait()
	ran := time.Since(start)
	limit := int64(r.Burst) + int64(r.PerSecond*ran.Seconds()) + 1
	assert.LessOrEqual(t, granted.Load(), limit, "granted %d in %s", granted.Load(), ran)
	assert.GreaterOrEqual(t, granted.Load(), int64(r.Burst), "at least the burst passes")
	assert.Positive(t, denied.Load())

	// Every slot is free again: denials gave theirs back, grants released theirs.
	st := openStore(t, srv.Addr)
	key := BudgetKey{Account: account.Account, Region: account.Region, Kind: "discovery"}
	for i := range 2 {
		s, _, err := st.AcquireSlot(context.Background(), key, 2, time.Minute)
		require.NoError(t, err)
		require.NotNil(t, s, "slot %d", i)
	}
}

// TestBudgetDeadReplica: a replica that dies holding slots frees them when their lease,
// its requests' deadline plus leaseMargin, ends.
func TestBudgetDeadReplica(t *testing.T) {
	srv := storetest.Start(t)
	limits := AccountLimits{QueryConcurrency: 2}
	dying := newBudget(t, openStore(t, srv.Addr), account, limits, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	for range 2 {
		release, _, err := dying.Take(ctx, promclient.ClassQuery, 1)
		require.NoError(t, err)
		require.NotNil(t, release)
	}
	require.NoError(t, dying.st.Close()) // never released

	b := newBudget(t, openStore(t, srv.Addr), account, limits, 1)
	release, wait, err := b.Take(context.Background(), promclient.ClassQuery, 1)
	require.NoError(t, err)
	require.Nil(t, release, "the dead replica holds both slots")
	assert.Equal(t, slotPoll, wait, "asked again soon: a slot may be released any time")
	denials := 0
	for deadline := time.Now().Add(leaseMargin + 5*time.Second); release == nil && time.Now().Before(deadline); time.Sleep(wait) {
		denials++
		release, wait, err = b.Take(context.Background(), promclient.ClassQuery, 1)
		require.NoError(t, err)
	}
	require.NotNil(t, release, "the dead replica's slots expired")
	// 50 ms + leaseMargin at one try per slotPoll: the lease held for dozens of tries.
	assert.Greater(t, denials, int(leaseMargin/slotPoll/2))
}

// TestBudgetScopes: data sources of one account share its budget whatever their
// credentials; without a known account, the budget is the credential's own.
func TestBudgetScopes(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr)
	limits := AccountLimits{DiscoveryConcurrency: 1}
	take := func(id Identity) bool {
		release, _, err := newBudget(t, st, id, limits, 1).Take(context.Background(), promclient.ClassDiscovery, 1)
		require.NoError(t, err)
		return release != nil
	}
	otherRole := account
	otherRole.RoleARN = "arn:aws:iam::123456789012:role/other-team"
	assert.True(t, take(account))
	assert.False(t, take(otherRole), "same account, other credentials: one budget")
	otherRegion := account
	otherRegion.Region = "eu-west-1"
	assert.True(t, take(otherRegion), "each region has its own limits")

	unknownA := Identity{Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/a"}
	unknownB := Identity{Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/b"}
	assert.True(t, take(unknownA))
	assert.False(t, take(unknownA), "one credential: one budget")
	assert.True(t, take(unknownB), "account unknown: per credential, not per account")
}

// TestBudgetStoreDown: Take reports the store's failure for the client to fall back.
func TestBudgetStoreDown(t *testing.T) {
	srv := storetest.Start(t)
	b := newBudget(t, openStore(t, srv.Addr), account, AccountLimits{}, 0.8)
	srv.Stop()
	release, _, err := b.Take(context.Background(), promclient.ClassQuery, 1)
	assert.Nil(t, release)
	assert.True(t, IsUnavailable(err), "%v", err)
}

// TestBudgetGivesBackOrphans: a slot whose release fails (here skipped while the store
// backs off after a pause) is given back once the store answers, not held until its lease
// ends (here 31 s, the request's deadline + 1 s).
func TestBudgetGivesBackOrphans(t *testing.T) {
	srv := storetest.Start(t)
	b := newBudget(t, openStore(t, srv.Addr, func(s *Settings) { s.Timeout = DefaultTimeout }), account, AccountLimits{QueryConcurrency: 1}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	release, _, err := b.Take(ctx, promclient.ClassQuery, 1)
	require.NoError(t, err)
	require.NotNil(t, release)
	srv.Pause()
	_, _, err = b.Take(ctx, promclient.ClassQuery, 1)
	require.True(t, IsUnavailable(err), "%v", err)
	srv.Resume()
	release() // not sent: the store backs off
	require.NotNil(t, b.st.Unavailable(), "the release was skipped, not sent")
	// After the store's backoff (its first step: 250 ms), far from 31 s.
	release = nil
	for deadline := time.Now().Add(5 * time.Second); release == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		release, _, _ = b.Take(ctx, promclient.ClassQuery, 1)
	}
	assert.NotNil(t, release, "the orphaned slot was given back")
}

// TestBudgetPace: CloudTrail's 2 calls a second at the data source's share, rounded down
// (at least one), shared by the account's replicas and apart from its other limits.
func TestBudgetPace(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  Rate
	}{
		{1, Rate{PerSecond: 2, Burst: 1}},   // 2 in any one-second window
		{0.8, Rate{PerSecond: 1, Burst: 1}}, // 1.6 rounds down to 1
		{0.1, Rate{PerSecond: 1, Burst: 1}}, // never below one
	} {
		assert.Equal(t, tc.want, ShareRate(tc.share, LookupEventsTPS), "share %g", tc.share)
	}

	srv := storetest.Start(t)
	ctx := context.Background()
	a := newBudget(t, openStore(t, srv.Addr), account, AccountLimits{}, 1)
	b := newBudget(t, openStore(t, srv.Addr), account, AccountLimits{}, 1) // another replica
	wait, err := a.Pace(ctx, KindLookupEvents, LookupEventsTPS)
	require.NoError(t, err)
	assert.Zero(t, wait, "the first call goes")
	wait, err = b.Pace(ctx, KindLookupEvents, LookupEventsTPS)
	require.NoError(t, err)
	assert.Greater(t, wait, time.Duration(0), "the other replica's call at once is denied")
	assert.LessOrEqual(t, wait, 500*time.Millisecond, "and may go one interval (1/2 s) later")

	release, _, err := b.Take(ctx, promclient.ClassDiscovery, 1)
	require.NoError(t, err)
	assert.NotNil(t, release, "CloudWatch's budget is apart from CloudTrail's pace")
	release()
	other := newBudget(t, openStore(t, srv.Addr), Identity{Account: "210987654321", Region: "us-east-1"}, AccountLimits{}, 1)
	wait, err = other.Pace(ctx, KindLookupEvents, LookupEventsTPS)
	require.NoError(t, err)
	assert.Zero(t, wait, "another account's pace is its own")
	_, err = a.Pace(ctx, "Cloud Trail", LookupEventsTPS)
	assert.ErrorContains(t, err, "the kind lower-case letters")

	srv.Stop()
	_, err = a.Pace(ctx, KindLookupEvents, LookupEventsTPS)
	assert.True(t, IsUnavailable(err), "a stopped store: %v", err)
}
