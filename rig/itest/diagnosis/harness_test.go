package diagnosis_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// The rules are tested against a real PromQL engine over synthetic series, so the queries
// themselves (quoting, functions, grouping) are exercised, not only the logic around them.

var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

const (
	points = 181 // 3h of one-minute samples, both ends included
	tStep  = time.Minute
)

func tEnd() time.Time { return t0.Add(time.Duration(points-1) * tStep) }

// engineQuerier runs queries on a Prometheus engine and counts them.
type engineQuerier struct {
	eng *promql.Engine
	db  storage.Queryable
	mu  sync.Mutex
	n   int
	log []string
}

func newEngine(t testing.TB) *promql.Engine {
	eng := promql.NewEngine(promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		Parser: parser.NewParser(parser.Options{}),
	})
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

func (q *engineQuerier) note(expr string) {
	q.mu.Lock()
	q.n++
	q.log = append(q.log, expr)
	q.mu.Unlock()
}

func (q *engineQuerier) Instant(ctx context.Context, expr string, t time.Time) (model.Vector, error) {
	q.note(expr)
	qry, err := q.eng.NewInstantQuery(ctx, q.db, nil, expr, t)
	if err != nil {
		return nil, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	v, err := res.Vector()
	if err != nil {
		return nil, err
	}
	out := make(model.Vector, 0, len(v))
	for _, s := range v {
		if s.H != nil {
			continue // rules never ask for raw histograms
		}
		out = append(out, &model.Sample{Metric: toMetric(s.Metric), Value: model.SampleValue(s.F), Timestamp: model.Time(s.T)})
	}
	return out, nil
}

func (q *engineQuerier) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	q.note(expr)
	qry, err := q.eng.NewRangeQuery(ctx, q.db, nil, expr, start, end, step)
	if err != nil {
		return nil, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	m, err := res.Matrix()
	if err != nil {
		return nil, err
	}
	out := make(model.Matrix, 0, len(m))
	for _, s := range m {
		ss := &model.SampleStream{Metric: toMetric(s.Metric)}
		for _, p := range s.Floats {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.Time(p.T), Value: model.SampleValue(p.F)})
		}
		out = append(out, ss)
	}
	return out, nil
}

func toMetric(l labels.Labels) model.Metric {
	m := model.Metric{}
	l.Range(func(x labels.Label) { m[model.LabelName(x.Name)] = model.LabelValue(x.Value) })
	return m
}

// fleetData builds series at one-minute resolution over [t0, tEnd].
type fleetData struct {
	t   testing.TB
	db  *teststorage.TestStorage
	app storage.Appender
}

func newData(t testing.TB) *fleetData {
	db := teststorage.New(t)
	return &fleetData{t: t, db: db, app: db.Appender(context.Background())}
}

// querier commits the data and returns a counting querier over it.
func (d *fleetData) querier() *engineQuerier {
	if err := d.app.Commit(); err != nil {
		d.t.Fatal(err)
	}
	d.app = d.db.Appender(context.Background())
	return &engineQuerier{eng: newEngine(d.t), db: d.db}
}

func lbls(name string, kv ...string) labels.Labels {
	return labels.FromStrings(append([]string{"__name__", name}, kv...)...)
}

// float writes f(i) at minute i; NaN values are written (the engine must cope), and
// math.Inf(-1) means "no sample".
func (d *fleetData) float(l labels.Labels, f func(i int) float64) {
	for i := 0; i < points; i++ {
		v := f(i)
		if math.IsInf(v, -1) {
			continue
		}
		if _, err := d.app.Append(0, l, t0.Add(time.Duration(i)*tStep).UnixMilli(), v); err != nil {
			d.t.Fatal(err)
		}
	}
}

// counter writes a cumulative counter whose per-minute increase is f(i).
func (d *fleetData) counter(l labels.Labels, f func(i int) float64) {
	total := 0.0
	d.float(l, func(i int) float64 { total += f(i); return total })
}

// event writes single samples at the given minutes (control-plane events).
func (d *fleetData) event(l labels.Labels, at map[int]float64) {
	d.float(l, func(i int) float64 {
		if v, ok := at[i]; ok {
			return v
		}
		return math.Inf(-1)
	})
}

var latencyBounds = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64}

// hist writes a cumulative native histogram with custom bounds: every minute n(i)
// observations land in the bucket of value v(i).
func (d *fleetData) hist(l labels.Labels, bounds []float64, n, v func(i int) float64) {
	counts := make([]float64, len(bounds)+1)
	sum, count := 0.0, 0.0
	for i := 0; i < points; i++ {
		b := sort.SearchFloat64s(bounds, v(i))
		counts[b] += n(i)
		sum += n(i) * v(i)
		count += n(i)
		h := &histogram.FloatHistogram{
			Schema: histogram.CustomBucketsSchema, Count: count, Sum: sum,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: uint32(len(counts))}},
			PositiveBuckets: append([]float64(nil), counts...),
			CustomValues:    bounds,
		}
		if _, err := d.app.AppendHistogram(0, l, t0.Add(time.Duration(i)*tStep).UnixMilli(), nil, h); err != nil {
			d.t.Fatal(err)
		}
	}
}

// deltaHist writes a delta native histogram (the classic vended latencies, µs): each sample
// holds the n(i) observations of its minute at value v(i).
func (d *fleetData) deltaHist(l labels.Labels, bounds []float64, n, v func(i int) float64) {
	for i := 0; i < points; i++ {
		counts := make([]float64, len(bounds)+1)
		counts[sort.SearchFloat64s(bounds, v(i))] = n(i)
		h := &histogram.FloatHistogram{
			CounterResetHint: histogram.GaugeType,
			Schema:           histogram.CustomBucketsSchema, Count: n(i), Sum: n(i) * v(i),
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: uint32(len(counts))}},
			PositiveBuckets: counts,
			CustomValues:    bounds,
		}
		if _, err := d.app.AppendHistogram(0, l, t0.Add(time.Duration(i)*tStep).UnixMilli(), nil, h); err != nil {
			d.t.Fatal(err)
		}
	}
}

// Common label sets.
func engLabels(ep, ic, host, az string) []string {
	kv := []string{semconv.LabelEndpoint, ep, semconv.LabelHostID, host, semconv.LabelAZ, az, semconv.LabelFramework, semconv.FrameworkVLLM}
	if ic != "" {
		kv = append(kv, semconv.LabelInferenceComp, ic)
	}
	return kv
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

// ramp goes linearly from a to b over the range.
func ramp(a, b float64) func(int) float64 {
	return func(i int) float64 { return a + (b-a)*float64(i)/float64(points-1) }
}

// stepAt is a before minute k and b from k on.
func stepAt(k int, a, b float64) func(int) float64 {
	return func(i int) float64 {
		if i < k {
			return a
		}
		return b
	}
}

// diagnose runs the given rules (all when none) over the whole data range.
func diagnose(t testing.TB, q Querier, scope Scope, rules ...string) Report {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Rules = rules
	return diagnoseWith(t, q, scope, cfg)
}

func diagnoseWith(t testing.TB, q Querier, scope Scope, cfg Config) Report {
	t.Helper()
	r, err := Run(context.Background(), q, scope, t0, tEnd(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Failures {
		t.Errorf("rule %s failed: %s", f.Rule, f.Error)
	}
	return r
}

// describe prints findings for failure messages.
func describe(fs []Finding) string {
	var b strings.Builder
	for i, f := range fs {
		fmt.Fprintf(&b, "\n  %d. [%s %.1f] %s on %s: %s", i+1, f.Severity, f.Score, f.Cause, f.Target, f.Summary)
	}
	if len(fs) == 0 {
		return " (no findings)"
	}
	return b.String()
}

// only returns the findings of one rule.
func only(fs []Finding, rule string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}
