package builder

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/inferscope/sagemaker-datasource/pkg/fleet"
	"github.com/inferscope/sagemaker-datasource/pkg/simulator"
)

var fleetNow = time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC)

// result of one target: series returned (by label signature) and their last values.
type result map[string]float64

// querier answers a target the way the panel asks for it.
type querier interface {
	query(t *testing.T, expr string, instant bool) result
}

type engineQuerier struct {
	eng *promql.Engine
	db  *tsdb.DB
}

func backfill(t *testing.T, scenario string) *engineQuerier {
	t.Helper()
	opts := tsdb.DefaultOptions()
	opts.WALSegmentSize = -1
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	sim, err := simulator.New(fleet.Default(), scenario, 42)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Backfill(context.Background(), db, fleetNow.Add(-6*time.Hour), fleetNow, time.Minute); err != nil {
		t.Fatal(err)
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		Parser: parser.NewParser(parser.Options{})})
	t.Cleanup(func() { _ = eng.Close() })
	return &engineQuerier{eng: eng, db: db}
}

func (q *engineQuerier) query(t *testing.T, expr string, instant bool) result {
	t.Helper()
	ctx := context.Background()
	var qry promql.Query
	var err error
	if instant {
		qry, err = q.eng.NewInstantQuery(ctx, q.db, nil, expr, fleetNow)
	} else {
		qry, err = q.eng.NewRangeQuery(ctx, q.db, nil, expr, fleetNow.Add(-time.Hour), fleetNow, time.Minute)
	}
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		t.Fatalf("%s: %v", expr, res.Err)
	}
	out := result{}
	switch v := res.Value.(type) {
	case promql.Vector:
		for _, s := range v {
			out[s.Metric.String()] = s.F
		}
	case promql.Matrix:
		for _, s := range v {
			if len(s.Floats) > 0 {
				out[s.Metric.String()] = s.Floats[len(s.Floats)-1].F
			}
		}
	case promql.Scalar:
		out[""] = v.V
	}
	return out
}

// panelResults runs every PromQL target of every panel with the default variable values.
func panelResults(t *testing.T, q querier, override map[string]string) map[string]map[string]result {
	out := map[string]map[string]result{}
	for file, d := range decodeAll(t) {
		vars := defaultVars(d)
		for k, v := range override {
			vars[k] = v
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				expr, ok := tg["expr"].(string)
				if !ok {
					continue
				}
				key := fmt.Sprintf("%s/%d %s", strings.TrimSuffix(file, ".json"), p.ID, p.Title)
				if out[key] == nil {
					out[key] = map[string]result{}
				}
				instant, _ := tg["instant"].(bool)
				out[key][tg["refId"].(string)] = q.query(t, interpolate(expr, vars), instant)
			}
		}
	}
	return out
}

func TestPanelsReturnDataForDefaultFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills a simulated fleet")
	}
	res := panelResults(t, backfill(t, "healthy"), nil)
	var names []string
	for k := range res {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		empty := []string{}
		for ref, r := range res[name] {
			if len(r) == 0 {
				empty = append(empty, ref)
			}
		}
		sort.Strings(empty)
		t.Logf("%-60s empty=%v", name, empty)
	}
}
