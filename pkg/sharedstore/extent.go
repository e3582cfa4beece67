package sharedstore

import (
	"context"
	"errors"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// PutExtent encodes e and stores it at key for ttl (in chunks when it is large).
func (st *Store) PutExtent(ctx context.Context, key string, e entry.Extent, ttl time.Duration) error {
	b, err := entry.Encode(e)
	if err != nil {
		return err
	}
	return st.putEncoded(ctx, key, b, ttl, "")
}

// GetExtent reads the extent at key (and its chunks). An entry that fails to decode, or
// whose chunks are not all there, is counted (Stats) and reported as a miss: never
// trusted, never an error for the caller. It is left to its TTL or the next write: during
// a rolling upgrade another plugin version may read it.
func (st *Store) GetExtent(ctx context.Context, key string) (entry.Extent, bool, error) {
	b, ok, rejected, err := st.getEncoded(ctx, key)
	if rejected != "" {
		st.stats.rejected(rejected)
	}
	if !ok || err != nil {
		return entry.Extent{}, false, err
	}
	e, derr := entry.Decode(b)
	if derr == nil {
		return e, true, nil
	}
	var de *entry.DecodeError
	if errors.As(derr, &de) {
		st.stats.rejected(de.Reason)
	}
	return entry.Extent{}, false, nil
}
