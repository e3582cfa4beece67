// Package fanout is the one place the plugin starts goroutines for a batch of work: the
// queries of a request, the regions of a query, the rules of a diagnosis, the AWS calls of
// an inventory. Every such batch wants the same three things: a bound, every item's own
// error, and a panic kept to the item that raised it (an unrecovered panic in any goroutine
// ends the plugin process, and every panel of every dashboard with it). It never logs:
// the caller knows what the work was and logs it (a panic arrives as a *panics.Error, with
// its stack).
package fanout

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// Each runs fn for every item (with its index), at most limit at once (limit < 1: all at once), and returns
// each item's error in the items' order once every call has returned. A panic in fn becomes
// that item's error (a *panics.Error). Once ctx is done no further item starts: each of them
// gets ctx's error, and the calls under way see ctx and decide for themselves.
func Each[T any](ctx context.Context, limit int, items []T, fn func(ctx context.Context, i int, item T) error) []error {
	errs := make([]error, len(items))
	if limit < 1 || limit > len(items) {
		limit = len(items)
	}
	sem := semaphore.NewWeighted(int64(limit))
	var wg sync.WaitGroup
	for i, item := range items {
		// Acquire may still succeed on a done context; the check first keeps the promise.
		err := ctx.Err()
		if err == nil {
			err = sem.Acquire(ctx, 1)
		}
		if err != nil {
			for j := i; j < len(items); j++ {
				errs[j] = err
			}
			break
		}
		wg.Go(func() {
			defer sem.Release(1)
			errs[i] = call(ctx, i, item, fn)
		})
	}
	wg.Wait()
	return errs
}

// Calls is Each over calls that need no item of their own.
func Calls(ctx context.Context, limit int, calls ...func(ctx context.Context) error) []error {
	return Each(ctx, limit, calls, func(ctx context.Context, _ int, call func(context.Context) error) error {
		return call(ctx)
	})
}

func call[T any](ctx context.Context, i int, item T, fn func(context.Context, int, T) error) (err error) {
	defer panics.Recover(func(p *panics.Error) { err = p })
	return fn(ctx, i, item)
}
