package stack

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// arrival hides the samples that have not arrived yet from every query the emulator runs.
// CloudWatch makes a sample readable some time after its timestamp (34 s in the emulator's
// live mode, often minutes for vended metrics); a backfilled history holds them all at once,
// so a test that evaluates at t with an ingestion delay d sets the arrival time to t-d and
// every selector, offset or not, then reads only samples up to it.
type arrival struct {
	storage.Queryable
	until atomic.Int64 // unix ms; math.MaxInt64 when every sample has arrived
}

func (a *arrival) Querier(mint, maxt int64) (storage.Querier, error) {
	until := a.until.Load()
	inner, err := a.Queryable.Querier(mint, min(maxt, until))
	if err != nil || until >= maxt {
		return inner, err
	}
	return arrivedQuerier{inner, until}, nil
}

type arrivedQuerier struct {
	storage.Querier
	until int64
}

// Select clamps the hints too: the TSDB reads hints.End instead of the querier's maxt.
func (q arrivedQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if hints != nil && hints.End > q.until {
		h := *hints
		h.End = q.until
		hints = &h
	}
	return q.Querier.Select(ctx, sortSeries, hints, ms...)
}

// SetArrived makes later queries read only the samples with a timestamp at or before t, as
// if the rest had not arrived yet; the zero time lets them read everything again.
func (s *Stack) SetArrived(t time.Time) { s.arrival.set(t) }

func (a *arrival) set(t time.Time) {
	if t.IsZero() {
		a.until.Store(math.MaxInt64)
		return
	}
	a.until.Store(t.UnixMilli())
}
