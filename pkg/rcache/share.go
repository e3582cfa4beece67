package rcache

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	shared "github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// Sharing range extents with other replicas through Options.Peer (instant answers:
// share_instant.go). The local entry stays the near cache: the peer is asked only when
// the entry needs upstream parts. An extent another replica fetched later than the entry's
// tail replaces it (freshness is then that fetch's, under the same rules); if parts
// remain, one replica claims the extent, fetches and publishes the merged extent, while
// the others wait for it (bounded) and read it.

const (
	// A claim's lease is the request's remaining time, so it outlasts the fetch it guards
	// (a lease that ended first would let the next holder fetch too; its publish would be
	// refused). claimLease bounds it for a request without a deadline or with a far one: a
	// replica that dies holding it costs the others at most their wait, and the next
	// refresh after the lease.
	claimLease = 2 * time.Minute
	// claimWait bounds a replica's wait for the holder (and at most half the request's
	// remaining time, leaving the other half to fetch itself). A range query on a large
	// fleet takes seconds upstream, and tens of seconds when replicas load dashboards
	// together: a waiter that gave up after a few seconds would fetch it again and make
	// every fetch slower (the 4-replica bench made 3.7-5.5× one replica's calls with a 5 s
	// bound). A holder that fails releases at once and wakes the waiters; one that dies
	// costs them this wait.
	claimWait = 30 * time.Second
	// A published extent lives twice its span (the dashboard is likely reopened or
	// refreshed within that), at least an hour and at most a day: a refresh publishes it
	// again, so only an extent nobody uses expires; the cache's freshness rule, not this,
	// decides whether an extent read is served.
	minShareTTL = time.Hour
	maxShareTTL = 24 * time.Hour
)

// sharing is one request's use of the peer for one extent.
type sharing struct {
	peer  Peer
	name  string
	claim Claim // held: this replica fetches and publishes
	err   error // the peer's first failure: the request then went on as without it
}

// failed records a peer failure; a context the caller cancelled is not the store's.
func (sh *sharing) failed(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if sh.err == nil && ctx.Err() == nil {
		sh.err = err
	}
	return true
}

// read reads the shared entry and hands it to adopt, if there is one; false on a store
// failure.
func (sh *sharing) read(ctx context.Context, adopt func(shared.Extent)) bool {
	x, ok, err := sh.peer.GetExtent(ctx, sh.name)
	if sh.failed(ctx, err) {
		return false
	}
	if ok {
		adopt(x)
	}
	return true
}

// consult brings in what other replicas fetched (load reads the shared entry into the
// request's; false on a store failure) while missing says the request still needs
// upstream; if it still does, this replica then holds the claim to fetch it, or waited for
// the replica that held it.
func (sh *sharing) consult(ctx context.Context, load, missing func() bool) {
	if !load() || !missing() {
		return
	}
	if sh.take(ctx) {
		if sh.claim != nil {
			// Published between the read and the claim (the holder released with it): read
			// again, or this replica would fetch what the holder just did.
			load()
		}
		return
	}
	wait := claimWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)/2)
	}
	if sh.failed(ctx, sh.peer.AwaitClaim(ctx, sh.name, wait)) || !load() {
		return
	}
	if missing() {
		// The holder failed or is slow: take the claim if it is free (and publish), else
		// fetch without it.
		sh.take(ctx)
	}
}

// take claims the extent; false when another replica holds it. A store failure is true
// with no claim: fetch without it.
func (sh *sharing) take(ctx context.Context) bool {
	lease := claimLease
	if dl, ok := ctx.Deadline(); ok {
		lease = min(lease, time.Until(dl))
	}
	if lease < time.Millisecond {
		return true
	}
	cl, err := sh.peer.Claim(ctx, sh.name, lease)
	if sh.failed(ctx, err) {
		return true
	}
	sh.claim = cl
	return cl != nil
}

// publishExtent stores the merged extent for the other replicas, if it can be shared;
// false when it stays local (native histograms, warnings or infos, samples off the grid).
func (sh *sharing) publishExtent(ctx context.Context, ent *entry) bool {
	x, ok := ent.extent()
	if ok {
		sh.publish(ctx, x, min(max(2*time.Duration(x.End-x.Start)*time.Millisecond, minShareTTL), maxShareTTL))
	}
	return ok
}

// publish stores x for ttl and releases the claim in one step.
func (sh *sharing) publish(ctx context.Context, x shared.Extent, ttl time.Duration) {
	cl := sh.claim
	sh.claim = nil
	sh.failed(ctx, cl.Publish(context.WithoutCancel(ctx), x, ttl))
}

// endSharing releases a claim not published, so the waiters fetch themselves at once,
// and counts a request whose use of the store failed.
func (c *Cache) endSharing(ctx context.Context, sh *sharing) {
	if sh.claim != nil {
		sh.failed(ctx, sh.claim.Release(context.WithoutCancel(ctx)))
		sh.claim = nil
	}
	if sh.err != nil {
		c.count(func(st *Stats) { st.StoreErrors++ })
	}
}

// adopt loads x into the entry when x's tail was fetched later than the entry's and
// reaches at least as far, merging it when the entry's untrusted part lies within x (the
// entry then holds nothing older than x past x's settled time), else replacing the entry.
// An older x still lends the entry its settled history before the entry's start (another
// replica's wider view, kept for those that ask it). Another replica's clock may run ahead
// of ours: its fetch counts as no later than now, and nothing it fetched as settled before
// the re-fetch window has passed here. An extent on another grid (a hash collision, a
// hostile entry) is ignored.
func (e *entry) adopt(x shared.Extent, now time.Time, window time.Duration) {
	if x.Step != e.step || mod(x.Start-e.phase, e.step) != 0 || x.End < x.Start {
		return
	}
	fetchedAt := min(x.FetchedAt, now.UnixMilli())
	settled := min(x.Settled, x.End, now.Add(-window).UnixMilli())
	empty := e.series == nil || e.end < e.start
	if !empty && (fetchedAt <= e.fetchedAt.UnixMilli() || x.End < e.end) {
		e.prepend(x, settled, now)
		return
	}
	if empty || x.Start > e.floor(min(e.trusted, e.end))+e.step {
		e.reset()
	}
	e.merge(sharedAnswer(x, x.Start, x.End), x.Start, x.End)
	e.start, e.end = min(e.start, x.Start), x.End
	e.trusted, e.fetchedAt = settled, time.UnixMilli(fetchedAt)
}

// prepend merges x's samples before the entry's start when x's settled part reaches it
// (they are final, whenever x was fetched), from at most maxShareTTL ago: a shared extent
// keeps no more history than that, however long it is refreshed.
func (e *entry) prepend(x shared.Extent, settled int64, now time.Time) {
	from, to := max(x.Start, e.floor(now.Add(-maxShareTTL).UnixMilli())), e.start-e.step
	if from > to || settled < to {
		return
	}
	e.merge(sharedAnswer(x, from, to), from, to)
	e.start = from
}

// extent is the entry in the shared encoding's form; false when it cannot be shared:
// version 1 carries float samples on the grid only, and no notices.
func (e *entry) extent() (shared.Extent, bool) {
	if len(e.warns) > 0 || len(e.infos) > 0 || e.end < e.start {
		return shared.Extent{}, false
	}
	x := shared.Extent{Start: e.start, End: e.end, Step: e.step, FetchedAt: e.fetchedAt.UnixMilli(), Settled: e.trusted}
	for _, s := range e.series {
		if len(s.Histograms) > 0 || !onGrid(s.T, e.start, e.end, e.step) {
			return shared.Extent{}, false
		}
		x.Series = append(x.Series, shared.Series{Labels: sharedLabels(s.pairs), T: s.T, V: s.V})
	}
	return x, true
}

// sharedLabels are label pairs (labelPairs) in the shared encoding's form.
func sharedLabels(pairs []string) []shared.Label {
	ls := make([]shared.Label, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		ls = append(ls, shared.Label{Name: pairs[i], Value: pairs[i+1]})
	}
	return ls
}

// onGrid says whether the times are strictly increasing on start + k·step within end.
func onGrid(ts []int64, start, end, step int64) bool {
	prev := start - step
	for _, t := range ts {
		if t <= prev || t > end || (t-start)%step != 0 {
			return false
		}
		prev = t
	}
	return true
}

// sharedAnswer is a shared extent's samples in [from, to] as the matrix answer merge
// takes; series without samples there are left out.
func sharedAnswer(x shared.Extent, from, to int64) *promclient.Answer {
	a := &promclient.Answer{Type: "matrix", Series: make([]promclient.Series, 0, len(x.Series))}
	for _, s := range x.Series {
		ls := make(data.Labels, len(s.Labels))
		for _, l := range s.Labels {
			ls[l.Name] = l.Value
		}
		if in := within(promclient.Series{Labels: ls, T: s.T, V: s.V}, from, to); len(in.T) > 0 {
			a.Series = append(a.Series, in)
		}
	}
	return a
}

// failure is the peer's failure, if any (nil without a peer).
func (sh *sharing) failure() error {
	if sh == nil {
		return nil
	}
	return sh.err
}

// sharedLookup serves the lookup name through the peer: from the store or another
// replica's fetch, with when that was (the value is stored behind its fetch time, 8 bytes
// of Unix ms, so every replica keeps it until ttl after the fetch, not after its read),
// else fetched here (zero time). A store failure, or a stored value too old or too short
// to be one of ours: fetched here, the failure counted.
func (c *Cache) sharedLookup(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, time.Time, error) {
	val, fromPeer, storeErr, err := c.opts.Peer.Once(ctx, name, ttl, func(ctx context.Context) ([]byte, error) {
		at := c.opts.Now().UnixMilli()
		v, err := fetch(ctx)
		return append(binary.BigEndian.AppendUint64(nil, uint64(at)), v...), err // #nosec G115 -- a time after 1970
	})
	if storeErr != nil {
		c.count(func(st *Stats) { st.StoreErrors++ })
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(val) < 8 {
		v, err := fetch(ctx)
		return v, time.Time{}, err
	}
	if !fromPeer {
		return val[8:], time.Time{}, nil
	}
	now := c.opts.Now()
	at := time.UnixMilli(min(int64(binary.BigEndian.Uint64(val)), now.UnixMilli())) // #nosec G115 -- a later time than now is taken as now
	if !now.Before(at.Add(ttl)) {
		v, err := fetch(ctx)
		return v, time.Time{}, err
	}
	return val[8:], at, nil
}
