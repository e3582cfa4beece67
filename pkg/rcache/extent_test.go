package rcache

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// TestNonMatrixIsHandedOverAsFetched: an answer the extent cannot keep is the answer
// given, from one call, and is not kept.
func TestNonMatrixIsHandedOverAsFetched(t *testing.T) {
	step := time.Minute
	now := time.Unix(1700000000+3600, 0)
	c := New(Options{Now: func() time.Time { return now }})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	start, end := time.Unix(1700000000, 0), time.Unix(1700000000+9*60, 0)
	vector := &promclient.Answer{Type: "vector", Series: []promclient.Series{{T: []int64{1}, V: []float64{2}}}}
	calls := 0
	for i := range 2 {
		got, res, err := c.QueryRange(context.Background(), k, start, end, func(context.Context, time.Time, time.Time) (*promclient.Answer, error) {
			calls++
			return vector, nil
		})
		if err != nil || got != vector || res.Outcome != Bypass || calls != i+1 {
			t.Errorf("request %d: %v, %s after %d calls; want the vector as fetched, bypassed", i, err, res.Outcome, calls)
		}
	}
}

// --- exactness: answers assembled from an extent equal the fetched answers ---

func randValueText(rng *rand.Rand) string {
	switch rng.IntN(14) {
	case 0:
		return []string{"NaN", "+Inf", "-Inf", "Inf", "inf", "-inf", "nan", "Infinity", "-0", "0", "+0", "-0.0"}[rng.IntN(12)]
	case 1: // any bit pattern, incl. subnormals, NaN payloads, huge
		f := math.Float64frombits(rng.Uint64())
		return strconv.FormatFloat(f, []byte("gef")[rng.IntN(3)], -1, 64)
	case 2: // subnormal
		f := math.Float64frombits(rng.Uint64N(1 << 52))
		return strconv.FormatFloat(f, 'e', -1, 64)
	case 3: // near max
		return strconv.FormatFloat(math.MaxFloat64*(0.5+rng.Float64()/2), 'g', -1, 64)
	case 4: // more digits than needed
		return strconv.FormatFloat(rng.NormFloat64()*1e6, 'f', 25, 64)
	case 5: // exponent forms
		return fmt.Sprintf("%dE%d", rng.IntN(1000)-500, rng.IntN(600)-300)
	case 6: // hex float (strconv accepts)
		return strconv.FormatFloat(rng.NormFloat64(), 'x', -1, 64)
	case 7:
		return "5e-324"
	case 8:
		return "4.9406564584124654e-324"
	case 9: // halfway-ish long decimal
		return "0.1000000000000000055511151231257827021181583404541015625"
	default:
		return strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)), 'g', -1, 64)
	}
}

func randTimeText(rng *rand.Rand, ms int64) string {
	secs := float64(ms) / 1000
	switch rng.IntN(6) {
	case 0:
		return strconv.FormatFloat(secs, 'e', -1, 64)
	case 1: // sub-millisecond noise, rounded by both readers
		return strconv.FormatFloat(secs+(rng.Float64()-0.5)*0.00099, 'f', -1, 64)
	case 2:
		return strconv.FormatFloat(secs, 'f', 6, 64)
	}
	return strconv.FormatFloat(secs, 'f', -1, 64)
}

func randHist(rng *rand.Rand) string {
	n := rng.IntN(4)
	var bs []string
	for range n {
		lo := rng.Float64() * 10
		bs = append(bs, fmt.Sprintf(`[%d,"%s","%s","%s"]`, rng.IntN(4), strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(lo+rng.Float64(), 'g', -1, 64), randValueText(rng)))
	}
	return fmt.Sprintf(`{ "count" : "%d", "sum": "%s", "buckets": [%s]}`, rng.IntN(100), randValueText(rng), strings.Join(bs, ", "))
}

// randAnswer is a Prometheus-like answer: series sorted by labels, samples in time order.
func randAnswer(rng *rand.Rand, from, step int64, n int) []byte {
	type ser struct {
		labels map[string]string
		sorted []string
	}
	var ss []ser
	seen := map[string]bool{}
	for range 1 + rng.IntN(6) {
		l := map[string]string{}
		if rng.IntN(4) > 0 {
			l["__name__"] = []string{"m", "up", "a_b"}[rng.IntN(3)]
		}
		for range rng.IntN(3) {
			l[[]string{"job", "i", "zone", "é", "a\"b"}[rng.IntN(5)]] = []string{"x", "y", "", "ü\n", "1"}[rng.IntN(5)]
		}
		s := ser{labels: l, sorted: newSeries(promclient.Series{Labels: l}).pairs}
		if seen[strings.Join(s.sorted, "\xff")] {
			continue
		}
		seen[strings.Join(s.sorted, "\xff")] = true
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(a, b ser) int { return compareLabels(a.sorted, b.sorted) })
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	first := true
	for _, s := range ss {
		var vals, hists []string
		kind := rng.IntN(4) // 0,1: values; 2: histograms; 3: both
		for i := range n {
			if rng.IntN(5) == 0 {
				continue
			}
			ms := from + int64(i)*step
			if kind != 2 && (kind != 3 || rng.IntN(2) == 0) {
				vals = append(vals, fmt.Sprintf(`[%s,"%s"]`, randTimeText(rng, ms), randValueText(rng)))
			} else if kind >= 2 {
				hists = append(hists, fmt.Sprintf(`[%s,%s]`, randTimeText(rng, ms), randHist(rng)))
			}
		}
		if len(vals) == 0 && len(hists) == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		metric := new(bytes.Buffer)
		metric.WriteString("{")
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for i, k := range keys {
			if i > 0 {
				metric.WriteString(", ")
			}
			fmt.Fprintf(metric, "%q : %q", k, s.labels[k])
		}
		metric.WriteString("}")
		fmt.Fprintf(&b, `{"metric":%s`, metric)
		if len(vals) > 0 {
			fmt.Fprintf(&b, `,"values":[%s]`, strings.Join(vals, ","))
		}
		if len(hists) > 0 {
			fmt.Fprintf(&b, `,"histograms":[%s]`, strings.Join(hists, ","))
		}
		b.WriteString("}")
	}
	b.WriteString(`]}`)
	if rng.IntN(2) == 0 {
		b.WriteString(`,"warnings":["w1","w2 \"q\""]`)
	}
	if rng.IntN(2) == 0 {
		b.WriteString(`,"infos":["i1"]`)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// TestExtentRoundTrips: random answers (fixed seeds) kept as QueryRange keeps them
// (merged into an extent in two parts, the second fetched again as a re-fetch window
// would, then assembled for the range) equal the fetched answers themselves, every
// value exact.
func TestExtentRoundTrips(t *testing.T) {
	step := int64(60000)
	from := int64(1700000000000)
	for seed := uint64(1); seed <= 800; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		n := 1 + rng.IntN(30)
		to := from + int64(n-1)*step
		body := randAnswer(rng, from, step, n)
		fetched := decoded(t, body)
		mid := from + int64(rng.IntN(n))*step
		e := &entry{}
		e.reset()
		e.merge(part(fetched, from, mid), from, mid)
		e.merge(part(fetched, mid+step, to), mid+step, to)
		e.merge(part(fetched, mid, to), mid, to)
		got := e.answer(from, to)
		if g, w := rendered(t, got), rendered(t, fetched); g != w {
			t.Fatalf("seed %d: answers differ\nbody %s\n got %.3000s\nwant %.3000s", seed, body, g, w)
		}
	}
}

// part is what a fetch of [from, to] would have given: a's samples there, series without
// any left out.
func part(a *promclient.Answer, from, to int64) *promclient.Answer {
	p := &promclient.Answer{Type: a.Type, Warnings: a.Warnings, Infos: a.Infos}
	for _, s := range a.Series {
		if in := within(s, from, to); len(in.T) > 0 || len(in.Histograms) > 0 {
			p.Series = append(p.Series, in)
		}
	}
	return p
}

// TestSparseSeriesKeptAllocation: a wide answer of sparse series (here 2,000 series of
// 3 points), decoded and kept in an extent, allocates in proportion to its body, not room
// per series for the whole range asked (a 7-day, 1-minute range reserved 330 MB when each
// series got that room), and the extent counts what it keeps.
func TestSparseSeriesKeptAllocation(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"i":"%04d"},"values":[[1700000000,"1"],[1700000060,"2"],[1700000120,"3"]]}`, i)
	}
	b.WriteString(`]}}`)
	body := []byte(b.String())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	e := &entry{}
	e.reset()
	e.merge(decoded(t, body), 1700000000000, 1700000000000+7*24*3600*1000)
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc - before
	kept := e.size()
	t.Logf("body %d B, allocated %d B while decoding and keeping, kept %d B (%.0fx the body)", len(body), alloc, kept, float64(alloc)/float64(len(body)))
	if alloc > 20*uint64(len(body)) {
		t.Errorf("decoding and keeping a %d B answer allocated %d B", len(body), alloc)
	}
	// Each series holds at least its 3 values and its label (the times are shared).
	if kept < 2000*(3*8+2*4) || kept > int64(alloc) {
		t.Errorf("the extent counts %d B for 2,000 series of 3 points (%d B allocated)", kept, alloc)
	}
}

// TestSharedTimesCountedOnce: the series of an answer on one grid keep one array of
// times, also after a part is merged again, and the extent counts it once: its size is
// the values, one set of times and a little per series.
func TestSharedTimesCountedOnce(t *testing.T) {
	const series, points = 100, 1000
	from, step := int64(1700000000000), int64(60000)
	to := from + (points-1)*step
	a := &promclient.Answer{Type: "matrix"}
	times := make([]int64, points)
	for i := range times {
		times[i] = from + int64(i)*step
	}
	for s := range series {
		v := make([]float64, points)
		a.Series = append(a.Series, promclient.Series{Labels: map[string]string{"i": fmt.Sprint(s)}, T: slices.Clone(times), V: v})
	}
	e := &entry{}
	e.reset()
	e.merge(a, from, to)
	tail := to - 10*step
	e.merge(part(a, tail, to), tail, to)
	values, oneTimes := int64(series*points*8), int64(points*8)
	if n := e.size(); n < values+oneTimes || n > values+oneTimes+series*512 {
		t.Errorf("size %d B, want %d B of values, %d B of times and under 512 B a series", n, values, oneTimes)
	}
	var first *int64
	for _, s := range e.series {
		if first == nil {
			first = &s.T[0]
		}
		if &s.T[0] != first {
			t.Fatal("the series do not share their times")
		}
	}
}

// TestSamplesKeptInTimeOrder: samples that come out of order are kept in time order (ties
// in the order given), and the fetched answer itself is left as it came.
func TestSamplesKeptInTimeOrder(t *testing.T) {
	a := &promclient.Answer{Type: "matrix", Series: []promclient.Series{{
		Labels:     map[string]string{"i": "1"},
		T:          []int64{3000, 1000, 2000, 1000},
		V:          []float64{3, 1, 2, -1},
		Histograms: []promclient.Histogram{{T: 2000}, {T: 1000, Buckets: []promclient.Bucket{{Count: 1}}}},
	}}}
	e := &entry{}
	e.reset()
	e.merge(a, 1000, 3000)
	got := e.answer(1000, 3000).Series[0]
	if !slices.Equal(got.T, []int64{1000, 1000, 2000, 3000}) || !slices.Equal(got.V, []float64{1, -1, 2, 3}) ||
		got.Histograms[0].T != 1000 || len(got.Histograms[0].Buckets) != 1 || got.Histograms[1].T != 2000 {
		t.Errorf("kept %+v, want the samples in time order", got)
	}
	if s := a.Series[0]; !slices.Equal(s.T, []int64{3000, 1000, 2000, 1000}) || s.Histograms[0].T != 2000 {
		t.Errorf("the fetched answer was changed: %+v", s)
	}
}
