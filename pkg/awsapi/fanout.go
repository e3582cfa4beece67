package awsapi

import (
	"context"
	"sync"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// each runs fn for every i in [0, n) on at most limit goroutines. The first error cancels
// the context of the others and is returned; a panic in fn becomes that item's error.
// Every goroutine has ended when each returns.
func each(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	work := make(chan int)
	for range min(limit, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := runOne(inner, i, fn); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case work <- i:
		case <-inner.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil {
		return ctx.Err()
	}
	return first
}

func runOne(ctx context.Context, i int, fn func(ctx context.Context, i int) error) (err error) {
	defer panics.Recover(func(p *panics.Error) { err = p })
	return fn(ctx, i)
}
