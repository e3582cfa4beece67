package emulator

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Accounts is a registry of AWS accounts' CloudWatch rate and concurrency limits. CloudWatch
// counts them per account, whichever region, listener or client a call comes through, so
// every Server given the same registry and account (Config.Accounts, Config.Account) shares
// one set of gates and counters: a test sees the account's limits breached by callers that
// each stay within them. The zero value is ready; it is safe for concurrent use.
type Accounts struct {
	mu   sync.Mutex
	byID map[string]*Account
}

// Account returns the account's gates, or nil when no Server of that account has joined.
func (a *Accounts) Account(id string) *Account {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byID[id]
}

// IDs are the accounts servers have joined, sorted.
func (a *Accounts) IDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]string, 0, len(a.byID))
	for id := range a.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// join returns the account's gates: the first Server of an account builds them from its
// limits and rate clock; a later one must ask for the same limits, as an account has one set.
func (a *Accounts) join(id string, l Limits, clock func() time.Time) (*Account, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if acct := a.byID[id]; acct != nil {
		if acct.rates != ratesOf(l) {
			return nil, fmt.Errorf("account %s already has %s from another server, this one asks for %s; give every server of one account the same Limits",
				id, acct.rates, ratesOf(l))
		}
		return acct, nil
	}
	if a.byID == nil {
		a.byID = map[string]*Account{}
	}
	acct := newAccount(id, l, clock)
	a.byID[id] = acct
	return acct, nil
}

// rates are the limits an account's gates enforce.
type rates struct {
	queryTPS, discoveryTPS   float64
	queryConc, discoveryConc int
}

func ratesOf(l Limits) rates {
	return rates{l.QueryTPS, l.DiscoveryTPS, l.QueryConcurrency, l.DiscoveryConcurrency}
}

func (r rates) String() string {
	return fmt.Sprintf("query %g TPS and %d in flight, discovery %g TPS and %d in flight", r.queryTPS, r.queryConc, r.discoveryTPS, r.discoveryConc)
}

// Account is one AWS account's CloudWatch PromQL limits (query and discovery rate and
// concurrency) and what they answered.
type Account struct {
	ID               string
	rates            rates
	query, discovery gate
}

func newAccount(id string, l Limits, clock func() time.Time) *Account {
	return &Account{ID: id, rates: ratesOf(l),
		query: gate{name: "query", tps: newTokenBucket(l.QueryTPS, clock), rate: l.QueryTPS,
			inFlight: newSlots(l.QueryConcurrency), conc: l.QueryConcurrency},
		discovery: gate{name: "discovery", tps: newTokenBucket(l.DiscoveryTPS, clock), rate: l.DiscoveryTPS,
			inFlight: newSlots(l.DiscoveryConcurrency), conc: l.DiscoveryConcurrency},
	}
}

// Counts are what the account's gates answered so far.
func (a *Account) Counts() AccountCounts {
	return AccountCounts{Query: a.query.counts(), Discovery: a.discovery.counts()}
}

// AccountCounts are an account's gate answers per limit class: query (/query, /query_range)
// and discovery (/series, /labels, /label/<name>/values).
type AccountCounts struct {
	Query     ClassCounts `json:"query"`
	Discovery ClassCounts `json:"discovery"`
}

// ClassCounts are one limit class's answers: every request that reached the gate is one of
// them (requests refused earlier, by signature, route or injected fault, are not).
type ClassCounts struct {
	Admitted  int64 `json:"admitted"`  // within both limits, served
	Throttled int64 `json:"throttled"` // 422 Rate exceeded: over the TPS limit
	Rejected  int64 `json:"rejected"`  // 429: over the concurrency limit
}

// Sub is what was counted since an earlier reading o, for tests that measure one phase.
func (c AccountCounts) Sub(o AccountCounts) AccountCounts {
	return AccountCounts{Query: c.Query.sub(o.Query), Discovery: c.Discovery.sub(o.Discovery)}
}

func (c ClassCounts) sub(o ClassCounts) ClassCounts {
	return ClassCounts{Admitted: c.Admitted - o.Admitted, Throttled: c.Throttled - o.Throttled, Rejected: c.Rejected - o.Rejected}
}

// gate is one class of CloudWatch limits: request rate and requests in flight.
type gate struct {
	name     string
	tps      *tokenBucket
	rate     float64
	inFlight slots
	conc     int

	admitted, throttled, rejected atomic.Int64
}

// enter admits a request or says why not; on success the caller must call release.
func (g *gate) enter() (release func(), aerr *apiError) {
	if !g.tps.allow() {
		g.throttled.Add(1)
		return nil, newAPIError(http.StatusUnprocessableEntity, errExecution,
			"Rate exceeded: the %s TPS limit of %g per account was reached; retry with backoff or reduce the request rate", g.name, g.rate)
	}
	if !g.inFlight.acquire() {
		g.rejected.Add(1)
		return nil, newAPIError(http.StatusTooManyRequests, errThrottled,
			"Too many concurrent requests: the %s concurrency limit of %d per account was reached; retry later", g.name, g.conc)
	}
	g.admitted.Add(1)
	return g.inFlight.release, nil
}

func (g *gate) counts() ClassCounts {
	return ClassCounts{Admitted: g.admitted.Load(), Throttled: g.throttled.Load(), Rejected: g.rejected.Load()}
}
