package alerts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/internal/alerttmpl"
)

// A small evaluator with Grafana's semantics for what the rules use: the data source query
// (through the plugin's QueryData with the FromAlert header, as Grafana's scheduler sends
// alert queries), a reduce expression (last/mean/max; mode dropNN drops NaN and nulls,
// replaceNN replaces them, no mode lets one NaN poison the series), a threshold (gt/lt; NaN
// never satisfies it) and the pending period (Normal → Pending on the first true evaluation,
// Firing once it has stayed true for `for`, back to Normal as soon as it is false).

// seriesValues is one series of a query result: its labels and its values in time order
// (NaN for nulls).
type seriesValues struct {
	labels data.Labels
	values []float64
}

// queryRule sends refId A of r to the plugin as Grafana's alerting would at time at.
func queryRule(ctx context.Context, ds backend.QueryDataHandler, r rule, at time.Time) ([]seriesValues, error) {
	model, err := json.Marshal(map[string]any{"refId": "A", "expr": r.Query, "instant": true, "range": false,
		"intervalMs": 60000, "maxDataPoints": 43200})
	if err != nil {
		return nil, err
	}
	resp, err := ds.QueryData(ctx, &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "alerts"}},
		Headers:       map[string]string{"FromAlert": "true"},
		Queries: []backend.DataQuery{{
			RefID: "A", JSON: model, Interval: time.Minute, MaxDataPoints: 43200,
			TimeRange: backend.TimeRange{From: at.Add(-r.Window), To: at},
		}},
	})
	if err != nil {
		return nil, err
	}
	dr := resp.Responses["A"]
	if dr.Error != nil {
		return nil, dr.Error
	}
	return frameSeries(dr.Frames), nil
}

// frameSeries reads every numeric field of every frame as one series.
func frameSeries(frames data.Frames) []seriesValues {
	var out []seriesValues
	for _, fr := range frames {
		n, _ := fr.RowLen()
		for _, f := range fr.Fields {
			if !f.Type().Numeric() {
				continue
			}
			s := seriesValues{labels: f.Labels}
			for i := 0; i < n; i++ {
				x, err := f.NullableFloatAt(i)
				if err != nil || x == nil {
					s.values = append(s.values, math.NaN())
					continue
				}
				s.values = append(s.values, *x)
			}
			out = append(out, s)
		}
	}
	return out
}

// reduce applies Grafana's reducer to a series' values.
func reduce(values []float64, reducer, mode string, replaceWith float64) float64 {
	var xs []float64
	for _, v := range values {
		switch {
		case !math.IsNaN(v):
			xs = append(xs, v)
		case mode == "dropNN":
		case mode == "replaceNN":
			xs = append(xs, replaceWith)
		default:
			return math.NaN() // strict: a NaN anywhere makes the result NaN
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	switch reducer {
	case "last":
		return xs[len(xs)-1]
	case "max":
		m := xs[0]
		for _, x := range xs[1:] {
			m = math.Max(m, x)
		}
		return m
	case "mean":
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	return math.NaN()
}

// threshold applies a gt/lt evaluator; NaN is never above or below anything.
func threshold(v float64, op string, p float64) bool {
	switch op {
	case "gt":
		return v > p
	case "lt":
		return v < p
	}
	return false
}

// instance is one alert instance: a rule and one series.
type instance struct {
	labels   map[string]string // the rule's labels rendered for the series
	since    time.Time         // first true evaluation of the current run
	firing   bool
	firedAt  time.Time
	lastVal  float64
	everFire bool
	// trueAt: the evaluations whose condition held (each one Pending or Firing in Grafana's
	// alert list and state history).
	trueAt []time.Time
}

// ruleState follows a rule's instances over evaluations.
type ruleState struct {
	r         rule
	instances map[string]*instance
	// nonFinite lists the query's NaN, ±Inf and null values: Grafana 9.3 fails to save the
	// state history of a batch that holds one ("unsupported value: NaN").
	nonFinite []string
}

func newRuleState(r rule) *ruleState { return &ruleState{r: r, instances: map[string]*instance{}} }

// evaluate runs one evaluation at time at.
func (st *ruleState) evaluate(ctx context.Context, ds backend.QueryDataHandler, at time.Time) error {
	ss, err := queryRule(ctx, ds, st.r, at)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", st.r.UID, at.Format(time.RFC3339), err)
	}
	seen := map[string]bool{}
	for _, s := range ss {
		for _, x := range s.values {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				st.nonFinite = append(st.nonFinite, fmt.Sprintf("%v at %s on %s", x, at.Format("15:04"), s.labels))
				break
			}
		}
		v := reduce(s.values, st.r.Reducer, st.r.ReduceMode, 0)
		key := s.labels.String()
		seen[key] = true
		in := st.instances[key]
		if in == nil {
			rendered, err := renderLabels(st.r.Labels, s.labels)
			if err != nil {
				return fmt.Errorf("%s: %w", st.r.UID, err)
			}
			in = &instance{labels: rendered}
			st.instances[key] = in
		}
		in.lastVal = v
		if !threshold(v, st.r.Op, st.r.Threshold) {
			in.since, in.firing = time.Time{}, false
			continue
		}
		in.trueAt = append(in.trueAt, at)
		if in.since.IsZero() {
			in.since = at
		}
		if !in.firing && at.Sub(in.since) >= st.r.Pending {
			in.firing, in.firedAt, in.everFire = true, at, true
		}
	}
	// A series that is gone is Normal again (noDataState OK; Grafana resolves missing series).
	for k, in := range st.instances {
		if !seen[k] {
			in.since, in.firing = time.Time{}, false
		}
	}
	return nil
}

// evaluateAll runs one evaluation of every rule at time at, the rules side by side (their
// states are independent, as in Grafana's scheduler) on up to GOMAXPROCS at once, and returns
// their errors.
func evaluateAll(ctx context.Context, ds backend.QueryDataHandler, states []*ruleState, at time.Time) error {
	errs := make([]error, len(states))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, s := range states {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = s.evaluate(ctx, ds, at)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// checkFinite fails t for every rule whose query returned a NaN, ±Inf or null value.
func checkFinite(t *testing.T, states []*ruleState, where string) {
	t.Helper()
	for _, s := range states {
		if n := len(s.nonFinite); n > 0 {
			t.Errorf("%s in %s: %d non-finite value(s), first %s; guard the rule's ratios", s.r.UID, where, n, s.nonFinite[0])
		}
	}
}

// fired lists the instances that reached Firing, by their rendered labels.
func (st *ruleState) fired() []*instance {
	var out []*instance
	for _, in := range st.instances {
		if in.everFire {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i].labels) < fmt.Sprint(out[j].labels) })
	return out
}

// renderLabels expands the rule's label templates for a series the way Grafana does ($labels
// holds the series' labels).
func renderLabels(tmpl map[string]string, series data.Labels) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range tmpl {
		r, err := alerttmpl.Render(v, alerttmpl.Instance{Labels: series})
		if err != nil {
			return nil, fmt.Errorf("label %s template %q: %w", k, v, err)
		}
		out[k] = r
	}
	return out, nil
}

func TestReduce(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		values        []float64
		reducer, mode string
		want          float64
	}{
		{[]float64{1, 5, 3}, "last", "", 3},
		{[]float64{1, 5, 3}, "max", "", 5},
		{[]float64{1, 5, 3}, "mean", "", 3},
		{[]float64{1, nan, 3}, "mean", "dropNN", 2},
		{[]float64{1, 3, nan}, "last", "dropNN", 3},
		{[]float64{1, nan, 3}, "max", "", nan},
		{[]float64{2, nan}, "mean", "replaceNN", 1},
		{[]float64{nan}, "last", "dropNN", nan},
		{nil, "max", "dropNN", nan},
	}
	for _, c := range cases {
		got := reduce(c.values, c.reducer, c.mode, 0)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("reduce(%v, %s, %q) = %v, want %v", c.values, c.reducer, c.mode, got, c.want)
		}
	}
}

func TestThreshold(t *testing.T) {
	cases := []struct {
		v    float64
		op   string
		p    float64
		want bool
	}{
		{1, "gt", 0.9, true}, {0.9, "gt", 0.9, false}, {0.05, "lt", 0.1, true}, {0.1, "lt", 0.1, false},
		{math.NaN(), "gt", 0, false}, {math.NaN(), "lt", 0, false}, {math.Inf(1), "gt", 5, true}, {1, "eq", 1, false},
	}
	for _, c := range cases {
		if got := threshold(c.v, c.op, c.p); got != c.want {
			t.Errorf("threshold(%v %s %v) = %v, want %v", c.v, c.op, c.p, got, c.want)
		}
	}
}

// The pending period: firing only after the condition held for `for`, reset when it breaks.
func TestPendingPeriod(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vals := []float64{1, 1, 0, 1, 1, 1, 1}
	fake := fakeSeries{vals: vals, t0: t0}
	st := newRuleState(rule{UID: "r", Reducer: "last", ReduceMode: "dropNN", Op: "gt", Threshold: 0.5, Pending: 3 * time.Minute, Window: time.Minute})
	for i := range vals {
		if err := st.evaluate(context.Background(), fake, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	f := st.fired()
	if len(f) != 1 || !f[0].firedAt.Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("fired %v, want one instance firing at minute 6 (true from minute 3)", f)
	}
	if len(st.nonFinite) != 0 {
		t.Errorf("finite values reported as non-finite: %v", st.nonFinite)
	}
}

// Every NaN or ±Inf a query returns is reported, whether or not the reduced value is.
func TestNonFiniteValuesReported(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vals := []float64{1, math.NaN(), math.Inf(1), 2, math.Inf(-1)}
	st := newRuleState(rule{UID: "r", Reducer: "last", ReduceMode: "dropNN", Op: "gt", Threshold: 0.5, Window: time.Minute})
	for i := range vals {
		if err := st.evaluate(context.Background(), fakeSeries{vals: vals, t0: t0}, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.nonFinite) != 3 || !strings.HasPrefix(st.nonFinite[0], "NaN at 00:01") || !strings.HasPrefix(st.nonFinite[2], "-Inf at 00:04") {
		t.Errorf("non-finite values %q, want NaN at 00:01, +Inf at 00:02 and -Inf at 00:04", st.nonFinite)
	}
}

// fakeSeries answers QueryData with one series whose value at minute i is vals[i].
type fakeSeries struct {
	vals []float64
	t0   time.Time
}

func (f fakeSeries) QueryData(_ context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	q := req.Queries[0]
	if req.Headers["FromAlert"] != "true" {
		return nil, fmt.Errorf("no FromAlert header")
	}
	i := int(q.TimeRange.To.Sub(f.t0) / time.Minute)
	fr := data.NewFrame("", data.NewField("Time", nil, []time.Time{q.TimeRange.To}),
		data.NewField("Value", data.Labels{"x": "y"}, []float64{f.vals[i]}))
	return &backend.QueryDataResponse{Responses: backend.Responses{"A": {Frames: data.Frames{fr}}}}, nil
}
