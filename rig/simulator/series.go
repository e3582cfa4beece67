package simulator

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// series is one label set built once, with the storage reference the appender returned, so a
// steady-state append is a map-free, allocation-free call.
type series struct {
	lbls   labels.Labels
	ref    storage.SeriesRef
	vended bool // an enriched vended metric: absent while OTel enrichment is off
}

// labelSet builds label sets from name/value pair groups; it counts what it creates.
type labelSet struct {
	b     labels.ScratchBuilder
	count int
}

func (ls *labelSet) make(name, typ string, groups ...[]string) series {
	ls.b.Reset()
	ls.b.Add(labels.MetricName, name)
	if typ != "" {
		ls.b.Add(semconv.LabelType, typ)
	}
	for _, g := range groups {
		for i := 0; i+1 < len(g); i += 2 {
			ls.b.Add(g[i], g[i+1])
		}
	}
	ls.b.Sort()
	ls.count++
	l := ls.b.Labels()
	return series{lbls: l, vended: l.Get(semconv.LabelScopeName) == semconv.ScopeSageMakerVended}
}

func (ls *labelSet) hist(name string, bounds []float64, delta bool, groups ...[]string) *histSeries {
	h := &histSeries{series: ls.make(name, semconv.TypeHistogram, groups...), bounds: bounds, delta: delta, counts: make([]uint64, len(bounds)+1)}
	h.logBounds = make([]float64, len(bounds))
	for i, b := range bounds {
		h.logBounds[i] = math.Log(b) // -Inf for a 0 bound: nothing falls at or below it
	}
	spans := []histogram.Span{{Offset: 0, Length: uint32(len(bounds) + 1)}} // #nosec G115 -- a few dozen buckets
	hint := histogram.UnknownCounterReset
	if delta {
		// Delta samples are independent interval counts: stored as gauge histograms so the
		// TSDB does not cut a chunk at every apparent counter reset.
		hint = histogram.GaugeType
	}
	for i := range h.buf {
		h.buf[i] = &histogram.Histogram{
			CounterResetHint: hint,
			Schema:           histogram.CustomBucketsSchema,
			CustomValues:     bounds,
			PositiveSpans:    spans,
			PositiveBuckets:  make([]int64, len(bounds)+1),
		}
	}
	return h
}

// histSeries is a native histogram with custom buckets (NHCB, schema -53): the engines'
// explicit bucket boundaries, which is also how Prometheus 3 stores OTel explicit-bucket
// histograms, so histogram_quantile interpolates exactly as over CloudWatch's data.
type histSeries struct {
	series
	bounds    []float64
	logBounds []float64
	delta     bool
	counts    []uint64 // per bucket (not cumulative over buckets), since the last reset
	count     uint64
	sum       float64
	// Two buffers used alternately: the TSDB keeps a pointer to the last appended histogram
	// of a series until the next append, so the buffer written now is never that one.
	buf  [2]*histogram.Histogram
	flip int
}

// observe adds n observations of a log-normal distribution with the given mean and shape.
// Counts per bucket come from the CDF, rounded cumulatively so they always sum to n.
func (h *histSeries) observe(n uint64, mean, sigma float64) {
	if n == 0 {
		return
	}
	h.count += n
	h.sum += float64(n) * mean
	if mean <= 0 {
		h.counts[0] += n
		return
	}
	mu := math.Log(mean) - sigma*sigma/2
	inv := 1 / (sigma * math.Sqrt2)
	var prev uint64
	for i, lb := range h.logBounds {
		// Far from the median the CDF rounds to 0 or 1: skip erfc there, and stop once
		// every observation is placed.
		z := (lb - mu) * inv
		cum := n
		switch {
		case z < -6:
			cum = 0
		case z < 6:
			cum = uint64(math.Round(float64(n) * 0.5 * math.Erfc(-z)))
		}
		cum = max(cum, prev)
		h.counts[i] += cum - prev
		prev = cum
		if prev == n {
			return
		}
	}
	h.counts[len(h.bounds)] += n - prev
}

func (h *histSeries) reset() {
	clear(h.counts)
	h.count, h.sum = 0, 0
}

// next fills the buffer not held by the TSDB with the current counts.
func (h *histSeries) next() *histogram.Histogram {
	out := h.buf[h.flip]
	h.flip ^= 1
	out.Count, out.Sum = h.count, h.sum
	var prev int64
	for i, c := range h.counts {
		out.PositiveBuckets[i] = int64(c) - prev // #nosec G115 -- simulated counts stay far below 2^63
		prev = int64(c)                          // #nosec G115 -- as above
	}
	return out
}

// writer wraps one appender transaction and keeps the first error.
type writer struct {
	app      storage.Appender
	samples  int
	err      error
	noVended bool // enrichment-off: vended series are not written
}

// finish commits the transaction, or rolls it back after an append error.
func (w *writer) finish() (int, error) {
	if w.err != nil {
		_ = w.app.Rollback()
		return 0, w.err
	}
	if err := w.app.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return w.samples, nil
}

func (w *writer) float(s *series, t int64, v float64) {
	if w.err != nil || (w.noVended && s.vended) {
		return
	}
	ref, err := w.app.Append(s.ref, s.lbls, t, v)
	if err != nil {
		w.err = err
		return
	}
	s.ref = ref
	w.samples++
}

// hist appends the histogram's state; delta histograms start a new interval afterwards.
func (w *writer) hist(h *histSeries, t int64) {
	if w.err != nil || (w.noVended && h.vended) {
		if h.delta {
			h.reset()
		}
		return
	}
	ref, err := w.app.AppendHistogram(h.ref, h.lbls, t, h.next(), nil)
	if err != nil {
		w.err = err
		return
	}
	h.ref = ref
	w.samples++
	if h.delta {
		h.reset()
	}
}

// counter accumulates a fractional rate and hands out whole events, so integer counts over
// many steps add up to the rate without drift.
type counter struct{ acc, emitted float64 }

// add accumulates x and returns how many whole events became due.
func (c *counter) add(x float64) uint64 {
	c.acc += x
	n := math.Floor(c.acc) - c.emitted
	c.emitted += n
	return uint64(n)
}

// poisson draws a count of independent rare events with the given mean. Errors are such
// events: drawn per copy and step, each instance's errors arrive at its own random times
// instead of every instance completing a whole error in the same minute.
func poisson(rng *rand.Rand, mean float64) uint64 {
	if mean <= 0 {
		return 0
	}
	if mean > 30 { // the normal approximation is close and avoids a long product
		return uint64(max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	limit, k, p := math.Exp(-mean), uint64(0), rng.Float64()
	for p > limit {
		k++
		p *= rng.Float64()
	}
	return k
}
