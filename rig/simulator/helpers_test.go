package simulator

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// testNow is a fixed end of history; 14:30 UTC is off-peak for no fleet in particular.
var testNow = time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC)

// backfilled opens a TSDB in a temp dir and backfills hours of the default fleet.
func backfilled(t testing.TB, scenario string, hours int) *tsdb.DB {
	t.Helper()
	return backfillFleet(t, fleet.Default(), scenario, hours)
}

// backfillFleet opens a TSDB in a temp dir and backfills hours of f (seed 42).
func backfillFleet(t testing.TB, f *fleet.Fleet, scenario string, hours int) *tsdb.DB {
	t.Helper()
	sim, err := New(f, scenario, 42)
	if err != nil {
		t.Fatal(err)
	}
	return backfillSim(t, sim, hours)
}

// backfillSim opens a TSDB in a temp dir and backfills hours of sim up to testNow.
func backfillSim(t testing.TB, sim *Simulator, hours int) *tsdb.DB {
	t.Helper()
	opts := tsdb.DefaultOptions()
	opts.WALSegmentSize = -1
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := sim.Backfill(context.Background(), db, testNow.Add(-time.Duration(hours)*time.Hour), testNow, time.Minute); err != nil {
		t.Fatal(err)
	}
	return db
}

var engine = promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})

// query evaluates expr at testNow and returns the samples by the value of label by ("" for a
// single result).
func query(t testing.TB, db *tsdb.DB, expr, by string) map[string]float64 {
	t.Helper()
	q, err := engine.NewInstantQuery(context.Background(), db, nil, expr, testNow)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%s: %v", expr, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	out := map[string]float64{}
	for _, s := range vec {
		v := s.F
		if s.H != nil {
			v = math.NaN()
		}
		out[s.Metric.Get(by)] = v
	}
	return out
}

// one is the single value of expr; it fails the test when expr has no result.
func one(t testing.TB, db *tsdb.DB, expr string) float64 {
	t.Helper()
	m := query(t, db, expr, "")
	if len(m) != 1 {
		t.Fatalf("%s: want one result, got %v", expr, m)
	}
	for _, v := range m {
		return v
	}
	return 0
}
