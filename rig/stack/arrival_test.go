package stack

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"
)

// With samples arrived until t-d, a query at t reads the samples up to t-d in instant
// selectors, range selectors and offsets alike; with all arrived, everything up to t.
func TestArrivalDelayHidesYoungSamples(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	t0 := time.Date(2026, 11, 2, 5, 0, 0, 0, time.UTC)
	app := db.Appender(context.Background())
	for m := 0; m <= 30; m++ {
		if _, err := app.Append(0, labels.FromStrings("__name__", "x"), t0.Add(time.Duration(m)*time.Minute).UnixMilli(), float64(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	a := &arrival{Queryable: db}
	a.set(time.Time{})
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	at := t0.Add(30 * time.Minute)
	for _, c := range []struct {
		delay       time.Duration
		last, count float64 // x at `at`, and its samples in (at-10m, at]
		offset      float64 // x offset 20m: old enough to have arrived
	}{{0, 30, 10, 10}, {time.Minute, 29, 9, 10}, {2 * time.Minute, 28, 8, 10}, {90 * time.Second, 28, 8, 10}, {4 * time.Minute, 26, 6, 10}} {
		if c.delay > 0 {
			a.set(at.Add(-c.delay))
		}
		for expr, want := range map[string]float64{"x": c.last, "count_over_time(x[10m])": c.count, "x offset 20m": c.offset} {
			q, err := engine.NewInstantQuery(context.Background(), a, nil, expr, at)
			if err != nil {
				t.Fatal(err)
			}
			res := q.Exec(context.Background())
			v, err := res.Vector()
			if err != nil || len(v) != 1 {
				t.Fatalf("delay %s, %s: %v %v", c.delay, expr, v, err)
			}
			if v[0].F != want {
				t.Errorf("delay %s: %s = %v at minute 30, want %v", c.delay, expr, v[0].F, want)
			}
			q.Close()
		}
	}
}
