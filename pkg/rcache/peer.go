package rcache

import (
	"context"
	"time"

	shared "github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// Peer is a store that other replicas of the plugin share (pkg/sharedstore implements it
// on Redis or Valkey). With Options.Peer set, the cache stays the near cache and the
// peer is consulted on a local miss or a stale tail: replicas read what one of them
// fetched, and of those that miss the same entry at once, one fetches. Every method's
// error is the store's failure: the cache then serves as it would without a peer.
// Names are the cache's own entry names; the peer namespaces and hashes them.
type Peer interface {
	// GetExtent reads the shared extent name; ok is false on a miss (or an entry the peer
	// did not trust).
	GetExtent(ctx context.Context, name string) (e shared.Extent, ok bool, err error)
	// Claim takes the right to fetch name for at most lease. A nil Claim and nil error:
	// another replica holds it (AwaitClaim waits for it to end).
	Claim(ctx context.Context, name string, lease time.Duration) (Claim, error)
	// AwaitClaim returns when the claim on name ends (published or released), or after
	// maxWait; its error is the store's failure or ctx's.
	AwaitClaim(ctx context.Context, name string, maxWait time.Duration) error
	// Once serves the whole value name (a lookup's body) from the store, or fetches it once
	// across replicas and stores it for ttl; shared says it came from the store or from
	// another replica's fetch. storeErr is the store's failure (the value was then fetched
	// locally); err is fetch's own.
	Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) (val []byte, shared bool, storeErr, err error)
	// Unavailable is the store's failure while it is backing off, else nil.
	Unavailable() error
}

// Claim is this replica's right to fetch an entry: it ends with Publish (the extent is
// stored for ttl and the claim released in one step) or Release (nothing stored).
type Claim interface {
	Publish(ctx context.Context, e shared.Extent, ttl time.Duration) error
	Release(ctx context.Context) error
}
