package awsapi

import (
	"context"

	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
)

// each runs fn for every i in [0, n) on at most limit goroutines. The first error cancels
// the context of the others and is returned (one failed page or Describe fails the whole
// read, so the rest is wasted work); a panic in fn becomes that item's error, returned
// when nothing else failed. Every call
// has returned when each returns.
func each(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	inner, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := fanout.Each(inner, limit, make([]struct{}, n), func(ctx context.Context, i int, _ struct{}) error {
		err := fn(ctx, i)
		if err != nil {
			cancel(err)
		}
		return err
	})
	if err := context.Cause(inner); err != nil {
		return err // the first failure, or the caller's cancellation
	}
	for _, err := range errs {
		if err != nil {
			return err // a panic, which cancelled nothing
		}
	}
	return nil
}
