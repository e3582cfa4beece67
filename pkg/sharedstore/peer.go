package sharedstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// Peer is one data source's results cache's view of the store (rcache.Peer): its extents
// and lookups live under its Namespace, so no other data source or credential reads them.
type Peer struct {
	st          *Store
	ns          Namespace
	lease, wait time.Duration // Once's; lookupLease and lookupWait unless WithFill
}

// NewPeer is the data source's peer for rcache.Options.Peer.
func NewPeer(st *Store, ns Namespace) *Peer {
	return &Peer{st: st, ns: ns, lease: lookupLease, wait: lookupWait}
}

// WithFill is the peer with Once's lease and wait set for lookups slower than the lookup*
// bounds allow (CloudTrail's changes take a paced sweep of seconds): the waiters then wait
// for the holder instead of fetching themselves, each still no longer than its context.
func (p *Peer) WithFill(lease, wait time.Duration) *Peer {
	q := *p
	q.lease, q.wait = lease, wait
	return &q
}

// The lookups' fill bounds. The query timeout is not known here, so they bound what a
// replica may cost the others: a lookup (labels, series, a variable's values) takes well
// under a second, so a holder gets lookupLease before others may claim again, and a
// waiter gives up after lookupWait and asks itself (a dashboard's variables block its
// panels: waiting longer than that would be worse than one extra call). A poll every
// lookupPoll costs a waiter at most one round trip per poll.
const (
	lookupLease = 30 * time.Second
	lookupWait  = 5 * time.Second
	lookupPoll  = 25 * time.Millisecond
	// claimPoll is how often AwaitClaim looks at a held lease.
	claimPoll = 25 * time.Millisecond
)

func (p *Peer) extentKey(name string) string { return p.ns.Key("extent", name) }

// GetExtent reads the shared extent name (Store.GetExtent); an entry that fails to decode,
// or whose chunks are not all there, is a miss (counted in Store.Stats().Rejected).
func (p *Peer) GetExtent(ctx context.Context, name string) (entry.Extent, bool, error) {
	return p.st.GetExtent(ctx, p.extentKey(name))
}

// Claim takes the lease on the extent name for lease: nil when another replica holds it.
func (p *Peer) Claim(ctx context.Context, name string, lease time.Duration) (rcache.Claim, error) {
	l, err := p.st.Acquire(ctx, p.extentKey(name), lease)
	if err != nil || l == nil {
		return nil, err
	}
	return extentClaim{l}, nil
}

// extentClaim is a held lease on an extent.
type extentClaim struct{ l *Lease }

// Publish stores e for ttl (in chunks when it is large, see ChunkBytes) and releases the
// lease in one step. An extent the codec refuses is not stored, and the lease is released
// so that waiters fetch themselves.
func (c extentClaim) Publish(ctx context.Context, e entry.Extent, ttl time.Duration) error {
	b, err := entry.Encode(e)
	if err == nil {
		err = atLeastMs("ttl", ttl)
	}
	if err != nil {
		return errors.Join(err, c.l.Release(ctx))
	}
	return c.l.st.putEncoded(ctx, c.l.entryKey(), b, ttl, c.l.token)
}

func (c extentClaim) Release(ctx context.Context) error { return c.l.Release(ctx) }

// AwaitClaim polls the lease on name until it is gone (published, released or expired)
// or maxWait has passed.
func (p *Peer) AwaitClaim(ctx context.Context, name string, maxWait time.Duration) error {
	key := LeaseKey(p.extentKey(name))
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	tick := time.NewTicker(claimPoll)
	defer tick.Stop()
	for {
		err := p.st.do(ctx, "EXISTS", func(ctx context.Context) error {
			n, err := p.st.rdb.Exists(ctx, key).Result()
			if err == nil && n == 0 {
				return redis.Nil // gone: do passes a nil reply through as a success
			}
			return err
		})
		switch {
		case errors.Is(err, redis.Nil):
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return nil
		case <-tick.C:
		}
	}
}

// Once serves the lookup name through Store.Once for ttl (see the lookup* bounds and
// WithFill). With a deadline, the wait is at most half the time left, so a replica whose
// holder is slow still has the other half to fetch itself, and the lease at most the time
// left: the holder's fetch cannot outlive its request.
func (p *Peer) Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) (val []byte, shared bool, storeErr, err error) {
	f := Fill{TTL: ttl, Lease: p.lease, Wait: p.wait, Poll: lookupPoll}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		f.Lease, f.Wait = min(f.Lease, max(left, time.Millisecond)), min(f.Wait, left/2)
	}
	r, err := p.st.Once(ctx, p.ns.Key("lookup", name), f, fetch)
	return r.Value, r.Outcome == FromStore || r.Outcome == FromHolder, r.StoreErr, err
}

// Unavailable is the store's failure while it is backing off, else nil.
func (p *Peer) Unavailable() error { return p.st.Unavailable() }
