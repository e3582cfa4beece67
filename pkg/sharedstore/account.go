package sharedstore

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// AccountLimits are an AWS account's CloudWatch limits in one region. A zero field means
// CloudWatch's default (CloudWatchLimits); set others when AWS raised the account's quota.
type AccountLimits struct {
	QueryTPS, DiscoveryTPS                 float64
	QueryConcurrency, DiscoveryConcurrency int
}

// CloudWatchLimits are CloudWatch's per-account PromQL limits (docs/cloudwatch-promql.md).
var CloudWatchLimits = AccountLimits{QueryTPS: 300, DiscoveryTPS: 10, QueryConcurrency: 30, DiscoveryConcurrency: 30}

func (l AccountLimits) withDefaults() AccountLimits {
	d := CloudWatchLimits
	if l.QueryTPS > 0 {
		d.QueryTPS = l.QueryTPS
	}
	if l.DiscoveryTPS > 0 {
		d.DiscoveryTPS = l.DiscoveryTPS
	}
	if l.QueryConcurrency > 0 {
		d.QueryConcurrency = l.QueryConcurrency
	}
	if l.DiscoveryConcurrency > 0 {
		d.DiscoveryConcurrency = l.DiscoveryConcurrency
	}
	return d
}

// of is class's rate and concurrency limits.
func (l AccountLimits) of(c promclient.Class) (tps float64, conc int) {
	if c == promclient.ClassDiscovery {
		return l.DiscoveryTPS, l.DiscoveryConcurrency
	}
	return l.QueryTPS, l.QueryConcurrency
}

// part is share of n, rounded down (never above the share) but at least min. The epsilon
// keeps 0.57×300 = 170.99999999999997 at 171.
func part(share, n float64, least float64) float64 {
	return max(least, math.Floor(share*n+1e-9))
}

// Fallback is what one replica may use alone while the store is unavailable: fallbackShare
// of the data source's share of the account, per class, so that replicas that each keep to
// it stay within the share together (4 replicas at the default 25% use 100% of it).
type Fallback struct {
	QueryRPS, DiscoveryRPS float64
	Concurrency            int // per class; the smaller of the two classes' limits
}

// FallbackOf is the fallback for share and fallbackShare (Settings.Shares()) of limits.
// Rates below one per second are kept (the client sends one call per 1/rate).
func FallbackOf(limits AccountLimits, share, fallbackShare float64) Fallback {
	l := limits.withDefaults()
	f := share * fallbackShare
	return Fallback{
		QueryRPS:     f * l.QueryTPS,
		DiscoveryRPS: f * l.DiscoveryTPS,
		Concurrency:  int(part(f, float64(min(l.QueryConcurrency, l.DiscoveryConcurrency)), 1)),
	}
}

// Apply sets the client's fallback options.
func (f Fallback) Apply(o *promclient.Options) {
	o.FallbackRPS, o.FallbackDiscoveryRPS, o.FallbackConcurrency = f.QueryRPS, f.DiscoveryRPS, f.Concurrency
}

// KindLookupEvents is the budget kind of CloudTrail's LookupEvents: its 2 calls a second
// per account and region (LookupEventsTPS) are shared like CloudWatch's limits (Pace).
const (
	KindLookupEvents = "cloudtrail"
	LookupEventsTPS  = 2
)

// Budget is a data source's share of its AWS account's limits in one region, kept in the
// store so that every replica and every data source of the account draws on it together.
// It is a promclient.AccountBudget.
type Budget struct {
	st            *Store
	scope, region string
	limits        AccountLimits
	share         float64

	mu      sync.Mutex
	orphans []*Slot // taken or held when the store failed: given back once it answers
}

var _ promclient.AccountBudget = (*Budget)(nil)

const (
	// leaseMargin is added to a request's remaining deadline to make its slot's lease. The
	// request cannot outlive its context, so its slot is released (or, the replica dead,
	// freed by the lease) at most this long after the request ends; a lease ending before
	// a late release only frees a slot whose request was already cancelled.
	leaseMargin = time.Second
	// noDeadlineLease bounds the slot of a request without a deadline: the plugin's
	// default query timeout. Such a request running longer frees its slot early.
	noDeadlineLease = 60 * time.Second
	// maxOrphans bounds the slots kept to give back after a failure; any beyond are left
	// to their leases.
	maxOrphans = 256
	// slotPoll is the longest a caller waits before asking again for a slot: slots are
	// released long before their lease ends, so the lease's end is no useful wait.
	slotPoll = 20 * time.Millisecond
)

// NewBudget is share (0-1, Settings.Shares()'s account fraction) of the limits of id's
// account in id's region. With id.Account unknown (""), the budget is kept per credential
// identity (id's hash) instead: data sources of one account with different credentials
// then each get share of the account, so set accountShare accordingly.
func NewBudget(st *Store, id Identity, limits AccountLimits, share float64) (*Budget, error) {
	if st == nil {
		return nil, fmt.Errorf("no shared store: open one with sharedstore.Open before building the account budget")
	}
	if !(share > 0 && share <= 1) {
		return nil, fmt.Errorf("account share %g is out of range: use a fraction in (0, 1], as Settings.Shares returns for %s", share, SetAccountShare)
	}
	if !regionPattern.MatchString(id.Region) {
		return nil, fmt.Errorf("region %q is not an AWS region: set the data source's region (such as us-east-1) to share the account's budget", id.Region)
	}
	scope := id.Account
	if scope == "" {
		scope = credentialScope + id.hash()
	} else if !accountPattern.MatchString(scope) {
		return nil, fmt.Errorf("account %q is not a 12-digit AWS account id", id.Account)
	}
	return &Budget{st: st, scope: scope, region: id.Region, limits: limits.withDefaults(), share: share}, nil
}

// Limits are the budget's own limits for class: the rate shaped so that no one-second
// window admits more than share of the account's TPS, and the concurrent slots.
func (b *Budget) Limits(c promclient.Class) (Rate, int) {
	tps, conc := b.limits.of(c)
	return ShareRate(b.share, tps), int(part(b.share, float64(conc), 1))
}

// ShareRate is share of an account's tps as a Rate that admits no more than the share,
// rounded down (at least one call), in any one-second window.
func ShareRate(share, tps float64) Rate { return windowRate(int(part(share, tps, 1))) }

// Pace takes one call of another of the account's per-second limits, kind's (such as
// KindLookupEvents, at tps calls a second for the whole account), at the budget's share
// of it: 0 when granted, else when to ask again. It has no slots: such limits bound calls
// a second only. An error is the store's (*Error) or a kind BudgetKey refuses.
func (b *Budget) Pace(ctx context.Context, kind string, tps float64) (time.Duration, error) {
	d, err := b.st.Allow(ctx, BudgetKey{Account: b.scope, Region: b.region, Kind: kind}, ShareRate(b.share, tps), 1)
	if err != nil || d.Allowed {
		return 0, err
	}
	return d.RetryAfter, nil // at least 1µs: the script rounds up
}

// windowRate lets at most n calls through in any one-second window and sustains nine
// tenths of n. GCRA with burst B at r per second admits B at once and then one per 1/r, so
// at most B + r − 1 in one second: B + r = n + 1. A tenth of n as the burst (24 queries at
// the default 80% of 300) lets a dashboard's first panels go together; a larger burst
// would buy a faster first second with a slower sustained rate (half of n at a burst of
// half), and the store's budget must not be slower than the fallback it replaces.
func windowRate(n int) Rate {
	burst := max(1, n/10)
	return Rate{PerSecond: float64(n + 1 - burst), Burst: burst}
}

// Take implements promclient.AccountBudget: a concurrent slot of class, then cost calls of
// its rate; the slot is given back when the rate denies. Denied: wait is when to ask again.
// An error is the store's (*Error) or a cost the rate can never allow.
func (b *Budget) Take(ctx context.Context, c promclient.Class, cost int) (release func(), wait time.Duration, err error) {
	key := BudgetKey{Account: b.scope, Region: b.region, Kind: string(c)}
	r, conc := b.Limits(c)
	slot, taken, wait, err := b.st.acquireSlot(ctx, key, conc, slotLease(ctx))
	if err != nil {
		b.orphan(slot)
		return nil, 0, err
	}
	b.adopt(ctx)
	if !taken {
		return nil, min(wait, slotPoll), nil
	}
	free := func() {
		// Not the caller's context: it may be done, and the slot must still go back.
		if slot.Release(context.WithoutCancel(ctx)) != nil {
			b.orphan(slot)
		}
	}
	d, err := b.st.Allow(ctx, key, r, cost)
	if err != nil || !d.Allowed {
		free()
		return nil, d.RetryAfter, err
	}
	return free, 0, nil
}

// orphan keeps a slot the store may hold although no request does: one whose take failed
// after it was sent (a paused store runs it when it resumes), or whose release failed.
// Left alone, each would shrink the budget until its lease ends, up to the query timeout
// after the store is back.
func (b *Budget) orphan(s *Slot) {
	if s == nil {
		return
	}
	b.mu.Lock()
	if len(b.orphans) < maxOrphans {
		b.orphans = append(b.orphans, s)
	}
	b.mu.Unlock()
}

// adopt gives the orphaned slots back, now that the store answers; those it cannot stay
// orphans.
func (b *Budget) adopt(ctx context.Context) {
	b.mu.Lock()
	orphans := b.orphans
	b.orphans = nil
	b.mu.Unlock()
	for i, s := range orphans {
		if s.Release(context.WithoutCancel(ctx)) != nil {
			for _, o := range orphans[i:] {
				b.orphan(o)
			}
			return
		}
	}
}

// slotLease is the lease of a slot taken for a request bounded by ctx.
func slotLease(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return max(time.Until(deadline), 0) + leaseMargin
	}
	return noDeadlineLease
}
