package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// TestEachErrors: every item's own outcome, in the items' order, whatever the bound.
func TestEachErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name  string
		limit int
		items []int
		fn    func(int) error
		want  []string // "" for nil, "panic:<value>" for a recovered panic
	}{
		{"empty", 3, nil, func(int) error { return nil }, []string{}},
		{"all fine", 2, []int{1, 2, 3}, func(int) error { return nil }, []string{"", "", ""}},
		{"one error", 0, []int{1, 2, 3}, func(i int) error {
			if i == 2 {
				return boom
			}
			return nil
		}, []string{"", "boom", ""}},
		{"a panic is its item's error", 1, []int{1, 2, 3}, func(i int) error {
			if i == 1 {
				panic("bad item")
			}
			return fmt.Errorf("item %d", i)
		}, []string{"panic:bad item", "item 2", "item 3"}},
		{"every item panics", 2, []int{7, 8}, func(i int) error { panic(i) }, []string{"panic:7", "panic:8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Each(context.Background(), tt.limit, tt.items, func(_ context.Context, _ int, i int) error { return tt.fn(i) })
			got := make([]string, len(errs))
			for i, err := range errs {
				var p *panics.Error
				switch {
				case err == nil:
				case errors.As(err, &p):
					got[i] = fmt.Sprint("panic:", p.Value)
					if len(p.Stack) == 0 {
						t.Errorf("item %d: the panic carries no stack for the log", i)
					}
				default:
					got[i] = err.Error()
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEachBound: never more than limit calls at once, and limit of them do run at once (the
// first limit items wait until all of them are running, which a smaller bound would never
// reach); a limit below 1 means all items at once.
func TestEachBound(t *testing.T) {
	for _, tt := range []struct{ limit, items, want int }{
		{1, 5, 1}, {3, 10, 3}, {4, 4, 4}, {8, 3, 3}, {0, 6, 6}, {-1, 2, 2},
	} {
		t.Run(fmt.Sprintf("limit %d of %d", tt.limit, tt.items), func(t *testing.T) {
			var running, most atomic.Int32
			full := make(chan struct{})
			var once sync.Once
			items := make([]int, tt.items)
			for i := range items {
				items[i] = i
			}
			errs := Each(context.Background(), tt.limit, items, func(_ context.Context, i, _ int) error {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if int(n) == tt.want {
					once.Do(func() { close(full) })
				}
				if i < tt.want {
					<-full
				}
				return nil
			})
			if int(most.Load()) != tt.want {
				t.Errorf("at most %d calls at once, want %d", most.Load(), tt.want)
			}
			for i, err := range errs {
				if err != nil {
					t.Errorf("item %d: %v", i, err)
				}
			}
		})
	}
}

// TestEachCancel: once the context is done no item starts; the items left get its error,
// and a call under way sees the same context.
func TestEachCancel(t *testing.T) {
	t.Run("done before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var called atomic.Int32
		errs := Each(ctx, 2, []int{1, 2, 3}, func(context.Context, int, int) error { called.Add(1); return nil })
		if called.Load() != 0 {
			t.Errorf("%d calls ran on a done context", called.Load())
		}
		for i, err := range errs {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("item %d: %v, want context.Canceled", i, err)
			}
		}
	})
	t.Run("done during", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		stop := errors.New("the caller left")
		var called []int
		errs := Each(ctx, 1, []int{0, 1, 2}, func(ctx context.Context, _, i int) error {
			called = append(called, i) // limit 1: one call at a time
			cancel(stop)
			return ctx.Err()
		})
		if fmt.Sprint(called) != "[0]" {
			t.Errorf("calls %v, want only [0]", called)
		}
		for i, err := range errs {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("item %d: %v, want context.Canceled", i, err)
			}
		}
	})
}

func TestCalls(t *testing.T) {
	errs := Calls(context.Background(), 0,
		func(context.Context) error { return nil },
		func(context.Context) error { panic("second") },
		func(context.Context) error { return errors.New("third") },
	)
	var p *panics.Error
	if len(errs) != 3 || errs[0] != nil || !errors.As(errs[1], &p) || p.Value != "second" || errs[2] == nil || errs[2].Error() != "third" {
		t.Errorf("Calls = %v", errs)
	}
}
