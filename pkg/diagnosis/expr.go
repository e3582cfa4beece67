package diagnosis

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Short names for the labels the rules group by.
const (
	lEP   = semconv.LabelEndpoint
	lIC   = semconv.LabelInferenceComp
	lHost = semconv.LabelHostID
	lAZ   = semconv.LabelAZ
	// tagLabel marks which sub-expression of an `or` batch a series came from.
	tagLabel = "signal"
)

// env is what a rule sees: the shared (memoised) querier, the scope and the time grid.
type env struct {
	q          *memoQuerier                                     // each distinct query sent once per run and region
	prices     func(instanceType string) (pricing.Price, error) // nil: no prices
	policies   PolicySource                                     // nil: none read
	policyOnce sync.Once
	policyMap  *Policies    // readPolicies' answer
	changes    ChangeSource // nil: none read
	region     string       // the region's name as RunRegions has it ("" in Run)
	scope      Scope
	start, end time.Time
	cfg        Config
	step       time.Duration // range-query resolution
	window     time.Duration // rate window for cumulative counters in range queries
	warnings   *warnings
}

// warnings collects what the reader must know about the results (truncation), once each.
type warnings struct {
	mu   sync.Mutex
	seen map[string]bool
	list []string
}

func (w *warnings) add(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen[msg] {
		w.seen[msg] = true
		w.list = append(w.list, msg)
	}
}

// checkSize warns when a result reaches the series limit: the upstream may have cut it.
func (e *env) checkSize(n int, expr string) {
	if n >= e.cfg.SeriesLimit {
		e.warnings.add(fmt.Sprintf("a query returned %d series, the most CloudWatch returns for one query, so some resources may be missing: narrow the scope to an endpoint (%s)", n, expr))
	}
}

// stepFor picks a step giving at most cfg.MaxPoints points, a whole number of MinSteps, and a
// rate window covering at least two steps.
func stepFor(r time.Duration, cfg Config) (step, window time.Duration) {
	n := int64(math.Ceil(float64(r) / float64(cfg.MaxPoints) / float64(cfg.MinStep)))
	if n < 1 {
		n = 1
	}
	step = time.Duration(n) * cfg.MinStep
	window = max(rateWindow, 2*step)
	return step, window
}

// QueryError is an upstream failure of one query; the query is kept apart so reports can
// show the (usually shared) cause once and the PromQL on demand.
type QueryError struct {
	Query string
	Err   error
}

func (e *QueryError) Error() string { return e.Err.Error() }
func (e *QueryError) Unwrap() error { return e.Err }

// rng is the whole range as a PromQL duration, for instant queries over the range.
func (e *env) rng() string { return promDur(e.end.Sub(e.start)) }

func (e *env) instant(ctx context.Context, expr string) (model.Vector, error) {
	v, err := e.q.Instant(ctx, expr, e.end)
	if err != nil {
		return nil, &QueryError{Query: expr, Err: err}
	}
	e.checkSize(len(v), expr)
	return v, nil
}

func (e *env) matrix(ctx context.Context, expr string) (model.Matrix, error) {
	return e.matrixFrom(ctx, expr, e.start)
}

// matrixFrom runs a range query starting before the range, for rules that need what came
// just before it (a baseline, the level before a drop at the range's edge). The start stays
// on the step grid so results line up with the other range queries.
func (e *env) matrixFrom(ctx context.Context, expr string, from time.Time) (model.Matrix, error) {
	if n := e.start.Sub(from) / e.step; n > 0 {
		from = e.start.Add(-n * e.step)
	} else {
		from = e.start
	}
	start, end := onGrid(from, e.end, e.step)
	m, err := e.q.Range(ctx, expr, start, end, e.step)
	if err != nil {
		return nil, &QueryError{Query: expr, Err: err}
	}
	e.checkSize(len(m), expr)
	return m, nil
}

// onGrid puts a range query on its step grid within [from, to] (from rounded up, to
// down), as the panels' range queries are: the same diagnosis refreshed a minute later
// then asks for the same extents, which the results cache serves, not new ones at another
// phase of the grid. Instant queries keep the range's end, the panels' evaluation time.
// A range too short to hold two grid times is asked as it is.
func onGrid(from, to time.Time, step time.Duration) (time.Time, time.Time) {
	s, t := from.Truncate(step), to.Truncate(step)
	if s.Before(from) {
		s = s.Add(step)
	}
	if !t.After(s) {
		return from, to
	}
	return s, t
}

// promDur writes d in PromQL duration syntax, whole seconds at least.
func promDur(d time.Duration) string {
	s := int64(d / time.Second)
	if s < 1 {
		s = 1
	}
	if s%3600 == 0 {
		return strconv.FormatInt(s/3600, 10) + "h"
	}
	if s%60 == 0 {
		return strconv.FormatInt(s/60, 10) + "m"
	}
	return strconv.FormatInt(s, 10) + "s"
}

// eng selects engine, DCGM and event series (they carry the aws.sagemaker.* labels).
func (e *env) eng(metric string, extra ...string) string {
	var m []string
	if e.scope.Endpoint != "" {
		m = append(m, px.Eq(lEP, e.scope.Endpoint))
	}
	if e.scope.InferenceComponent != "" {
		m = append(m, px.Eq(lIC, e.scope.InferenceComponent))
	}
	return px.Sel(metric, append(m, extra...)...)
}

// classic selects enriched vended metrics, which carry the CloudWatch dimension names.
func (e *env) classic(metric string) string {
	var m []string
	if e.scope.Endpoint != "" {
		m = append(m, px.Eq(semconv.DimEndpointName, e.scope.Endpoint))
	}
	if e.scope.InferenceComponent != "" {
		m = append(m, px.Eq(semconv.DimInferenceComponentName, e.scope.InferenceComponent))
	}
	return px.Sel(metric, m...)
}

// tagged joins sub-expressions with `or`, labelling each result with its key so one request
// answers several signals (CloudWatch counts requests, not expressions).
func tagged(parts ...[2]string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = px.Tag(p[1], tagLabel, p[0])
	}
	return px.Or(out...)
}

func label(m model.Metric, name string) string { return string(m[model.LabelName(name)]) }

// finite drops NaN and ±Inf (empty histograms, divisions by zero).
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// values returns the finite values of a series in time order.
func values(s *model.SampleStream) []float64 {
	out := make([]float64, 0, len(s.Values))
	for _, p := range s.Values {
		if v := float64(p.Value); finite(v) {
			out = append(out, v)
		}
	}
	return out
}

// quantile of xs (linear interpolation); NaN when xs is empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// usualPeak describes a series: its typical low level and its high level, robust to a
// few outliers.
func usualPeak(xs []float64) (usual, peak float64) {
	return quantile(xs, 0.25), quantile(xs, 0.95)
}

// tail is the mean of the last frac of the points (at least one): the "now" of a range.
func tail(xs []float64, frac float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	n := max(1, int(math.Round(float64(len(xs))*frac)))
	sum := 0.0
	for _, x := range xs[len(xs)-n:] {
		sum += x
	}
	return sum / float64(n)
}

// linearFit fits v = a + b·t (t in hours from the first point) over the finite points and
// returns the slope b and the fit's R².
func linearFit(s *model.SampleStream) (slopePerHour, r2 float64, n int) {
	var ts, vs []float64
	for _, p := range s.Values {
		if v := float64(p.Value); finite(v) {
			ts = append(ts, float64(p.Timestamp-s.Values[0].Timestamp)/3.6e6)
			vs = append(vs, v)
		}
	}
	n = len(ts)
	if n < 3 {
		return math.NaN(), math.NaN(), n
	}
	var mt, mv float64
	for i := range ts {
		mt += ts[i]
		mv += vs[i]
	}
	mt /= float64(n)
	mv /= float64(n)
	var stt, stv, svv float64
	for i := range ts {
		stt += (ts[i] - mt) * (ts[i] - mt)
		stv += (ts[i] - mt) * (vs[i] - mv)
		svv += (vs[i] - mv) * (vs[i] - mv)
	}
	if stt == 0 {
		return math.NaN(), math.NaN(), n
	}
	slopePerHour = stv / stt
	if svv == 0 {
		return slopePerHour, 1, n
	}
	return slopePerHour, stv * stv / (stt * svv), n
}

// icOrEndpoint builds the finding target for an engine/DCGM series: the IC when the series has one,
// else the endpoint.
func icOrEndpoint(m model.Metric) Target {
	ep, ic := label(m, lEP), label(m, lIC)
	if ic != "" {
		return Target{Level: LevelIC, Name: ic, Endpoint: ep, InferenceComponent: ic}
	}
	return Target{Level: LevelEndpoint, Name: ep, Endpoint: ep}
}

// key identifies an endpoint/IC pair across query results.
func key(m model.Metric) string { return label(m, lEP) + "\x00" + label(m, lIC) }

// byKey indexes a vector by key(), keeping finite values only.
func byKey(v model.Vector) map[string]float64 {
	out := make(map[string]float64, len(v))
	for _, s := range v {
		if f := float64(s.Value); finite(f) {
			out[key(s.Metric)] = f
		}
	}
	return out
}

// Formatting helpers for evidence.
func pct(v float64) string    { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }
func pctPts(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" }
func num(v float64) string    { return strconv.FormatFloat(v, 'f', -1, 64) }
func num1(v float64) string   { return strconv.FormatFloat(v, 'f', 1, 64) }
func count(v float64) string  { return strconv.FormatFloat(math.Round(v), 'f', 0, 64) }
func secs(v float64) string   { return fmtDur(time.Duration(v * float64(time.Second))) }
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		h, m := int(d.Hours()), int(d.Minutes())%60
		switch {
		case h == 0:
			return strconv.Itoa(m) + "m"
		case m == 0:
			return strconv.Itoa(h) + "h"
		}
		return strconv.Itoa(h) + "h" + strconv.Itoa(m) + "m"
	}
	return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + "d"
}

// strength maps x in [lo, hi] to [0, 1) for scores.
func strength(x, lo, hi float64) float64 {
	if !finite(x) || hi <= lo {
		return 0
	}
	return math.Max(0, math.Min(0.999, (x-lo)/(hi-lo)))
}
