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
				var ran, inFlight, most atomic.Int32
				err := each(tc.ctx, tc.n, 4, func(ctx context.Context, i int) error {
					ran.Add(1)
					cur := inFlight.Add(1)
					defer inFlight.Add(-1)
					for m := most.Load(); cur > m && !most.CompareAndSwap(m, cur); m = most.Load() {
					}
					return tc.fn(ctx, i)
				})
				if !tc.check(err) || !tc.wantRun(ran.Load()) {
					t.Errorf("error %v after %d items", err, ran.Load())
				}
				if most.Load() > 4 {
					t.Errorf("%d items at once, want at most 4", most.Load())
				}
			})
		})
	}
}
