package diagnosis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// Querier runs PromQL. Instant returns an instant vector evaluated at t; Range returns a
// matrix over [start, end] at step. Both see the upstream's limits (CloudWatch: 500 series).
type Querier interface {
	Instant(ctx context.Context, expr string, t time.Time) (model.Vector, error)
	Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error)
}

// memoQuerier sends each distinct query once per run, however many rules ask for it, and
// counts what reached the upstream. Concurrent askers of an in-flight query wait for it.
type memoQuerier struct {
	next Querier
	mu   sync.Mutex
	m    map[string]*memoEntry
	sent int
}

type memoEntry struct {
	done chan struct{}
	vec  model.Vector
	mat  model.Matrix
	err  error
}

func newMemoQuerier(q Querier) *memoQuerier {
	return &memoQuerier{next: q, m: map[string]*memoEntry{}}
}

func (m *memoQuerier) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent
}

// entry returns the entry for key and whether the caller must fill it.
func (m *memoQuerier) entry(key string) (*memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.m[key]; ok {
		return e, false
	}
	e := &memoEntry{done: make(chan struct{})}
	m.m[key] = e
	m.sent++
	return e, true
}

// fill runs the query and releases the waiters even when the querier panics (the panic is
// the entry's error), so the rules sharing the query fail instead of waiting forever.
func (e *memoEntry) fill(query func()) {
	defer close(e.done)
	defer panics.Recover(func(p *panics.Error) { e.err = p })
	query()
}

func (m *memoQuerier) wait(ctx context.Context, e *memoEntry) error {
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memoQuerier) Instant(ctx context.Context, expr string, t time.Time) (model.Vector, error) {
	e, fill := m.entry(fmt.Sprintf("i|%d|%s", t.UnixMilli(), expr))
	if fill {
		e.fill(func() { e.vec, e.err = m.next.Instant(ctx, expr, t) })
	} else if err := m.wait(ctx, e); err != nil {
		return nil, err
	}
	return e.vec, e.err
}

func (m *memoQuerier) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	e, fill := m.entry(fmt.Sprintf("r|%d|%d|%d|%s", start.UnixMilli(), end.UnixMilli(), step.Milliseconds(), expr))
	if fill {
		e.fill(func() { e.mat, e.err = m.next.Range(ctx, expr, start, end, step) })
	} else if err := m.wait(ctx, e); err != nil {
		return nil, err
	}
	return e.mat, e.err
}
