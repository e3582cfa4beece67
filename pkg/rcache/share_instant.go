package rcache

import (
	"context"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	shared "github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// Sharing instant answers with other replicas through Options.Peer: the answer is asked
// of the peer only when the local one does not serve the request, and served by the same
// rule as a local one; else one replica of those asking at once fetches and publishes it
// (the claim and wait of share.go).
//
// An instant answer is shared in the range extents' encoding: Settled is the evaluation
// time asked, Start and End the earliest and latest of it and the samples' times
// (Prometheus gives every sample of a vector the evaluation time, so all three are one),
// Step one millisecond (every sample time is then on the grid), each series its one float
// sample, with the answer's annotations. What that cannot carry stays local: scalars and
// strings, native histograms.

// instantGrid is the shared instant entry's Step.
const instantGrid = 1 // ms

// sharedInstant is Instant's fetch with a peer. It returns the answer another replica
// fetched when valid says this request may be given it, with when it was fetched, and
// sets *evalAt to the time it was evaluated at; else the answer fetched here (zero time),
// published for ttl when this replica holds the claim.
func (c *Cache) sharedInstant(ctx context.Context, name string, t time.Time, ttl time.Duration, valid func(fetchedAt, evalAt, now time.Time) bool,
	fetch func(context.Context) (*promclient.Answer, error), evalAt *time.Time) (*promclient.Answer, time.Time, error) {
	sh := &sharing{peer: c.opts.Peer, name: name}
	defer c.endSharing(ctx, sh)
	var got *promclient.Answer
	var gotAt time.Time
	load := func() bool {
		return sh.read(ctx, func(x shared.Extent) {
			a, ev, ok := instantAnswer(x)
			now := c.opts.Now()
			at := time.UnixMilli(min(x.FetchedAt, now.UnixMilli())) // a replica's clock ahead of ours: taken as now
			if ok && valid(at, ev, now) {
				got, gotAt, *evalAt = a, at, ev
			}
		})
	}
	sh.consult(ctx, load, func() bool { return got == nil })
	if got != nil {
		return got, gotAt, nil
	}
	now := c.opts.Now()
	a, err := fetch(ctx)
	if err != nil || sh.claim == nil {
		return a, time.Time{}, err
	}
	if x, ok := instantEntry(a, t, now); ok {
		sh.publish(ctx, x, ttl)
	} else {
		c.count(func(st *Stats) { st.KeptLocal++ })
	}
	return a, time.Time{}, nil
}

// instantTTL is how long a published instant answer lives in the store: as long as it may
// be served (Options.Fresh, or under the one-step rule until the second boundary of its
// step after its fetch, at most two steps), so the store holds none that no replica would
// serve.
func (c *Cache) instantTTL(step time.Duration) time.Duration {
	if c.opts.Fresh > 0 {
		return c.opts.Fresh
	}
	return 2 * step
}

// instantEntry is an answer evaluated at evalAt and fetched at fetchedAt in the shared
// encoding's form; false when it cannot be shared. The evaluation time is kept as Settled
// and Start is the earliest of it and the samples' times: a server that reads the time
// parameter a millisecond short stamps its samples before the time asked, and such an
// answer is shared all the same.
func instantEntry(a *promclient.Answer, evalAt, fetchedAt time.Time) (shared.Extent, bool) {
	if a.Type != "vector" {
		return shared.Extent{}, false
	}
	at := evalAt.UnixMilli()
	x := shared.Extent{Start: at, End: at, Step: instantGrid, FetchedAt: fetchedAt.UnixMilli(), Settled: at,
		Warnings: a.Warnings, Infos: a.Infos}
	for _, s := range a.Series {
		if len(s.Histograms) > 0 || len(s.T) != 1 || len(s.V) != 1 {
			return shared.Extent{}, false
		}
		x.Start, x.End = min(x.Start, s.T[0]), max(x.End, s.T[0])
		x.Series = append(x.Series, shared.Series{Labels: sharedLabels(labelPairs(s.Labels)), T: s.T, V: s.V})
	}
	if x.End-x.Start > shared.MaxSteps*instantGrid {
		return shared.Extent{}, false
	}
	return x, true
}

// instantAnswer is a shared instant entry as the vector answer it was, and the time it was
// evaluated at; false for an entry that is not one (a hash collision, a hostile entry).
func instantAnswer(x shared.Extent) (*promclient.Answer, time.Time, bool) {
	if x.Step != instantGrid {
		return nil, time.Time{}, false
	}
	for _, s := range x.Series {
		if len(s.T) != 1 {
			return nil, time.Time{}, false
		}
	}
	a := sharedAnswer(x, x.Start, x.End)
	a.Type = "vector"
	return a, time.UnixMilli(x.Settled), true
}
