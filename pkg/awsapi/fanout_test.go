package awsapi

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

func TestEach(t *testing.T) {
	boom := errors.New("boom")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		n       int
		fn      func(ctx context.Context, i int) error
		check   func(err error) bool
		wantRun func(ran int32) bool
	}{
		{name: "all run", ctx: context.Background(), n: 50, fn: func(context.Context, int) error { return nil },
			check: func(err error) bool { return err == nil }, wantRun: func(r int32) bool { return r == 50 }},
		{name: "first error stops the rest", ctx: context.Background(), n: 50, fn: func(ctx context.Context, i int) error {
			if i == 0 {
				return boom
			}
			<-ctx.Done() // the others run until canceled
			return ctx.Err()
		}, check: func(err error) bool { return errors.Is(err, boom) }, wantRun: func(r int32) bool { return r < 50 }},
		{name: "panic becomes the error", ctx: context.Background(), n: 3, fn: func(_ context.Context, i int) error {
			if i == 1 {
				panic("bad item")
			}
			return nil
		}, check: func(err error) bool { var p *panics.Error; return errors.As(err, &p) }, wantRun: func(r int32) bool { return r >= 2 }},
		{name: "canceled before start", ctx: canceled, n: 5, fn: func(context.Context, int) error { return nil },
			check: func(err error) bool { return errors.Is(err, context.Canceled) }, wantRun: func(r int32) bool { return r <= 5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// synctest.Test returns only when every goroutine the bubble started has ended.
			synctest.Test(t, func(t *testing.T) {
				var ran atomic.Int32
				err := each(tc.ctx, tc.n, 4, func(ctx context.Context, i int) error {
					ran.Add(1)
					return tc.fn(ctx, i)
				})
				if !tc.check(err) || !tc.wantRun(ran.Load()) {
					t.Errorf("error %v after %d items", err, ran.Load())
				}
			})
		})
	}
}

// TestEachRunsLimitAtOnce: with every item held, exactly limit of them run. synctest.Wait
// returns once every goroutine of the bubble is blocked, so no further item is on its way.
func TestEachRunsLimitAtOnce(t *testing.T) {
	for _, tc := range []struct{ n, limit, want int32 }{{50, 4, 4}, {3, 4, 3}, {5, 1, 1}} {
		synctest.Test(t, func(t *testing.T) {
			var running atomic.Int32
			release := make(chan struct{})
			done := make(chan error)
			go func() {
				done <- each(context.Background(), int(tc.n), int(tc.limit), func(context.Context, int) error {
					running.Add(1)
					defer running.Add(-1)
					<-release
					return nil
				})
			}()
			synctest.Wait()
			if got := running.Load(); got != tc.want {
				t.Errorf("%d items with limit %d: %d running at once, want %d", tc.n, tc.limit, got, tc.want)
			}
			close(release)
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
}
