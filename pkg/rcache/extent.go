package rcache

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// The extent algebra: an extent is one range query's series on its step grid, merged with
// each fetch and trimmed to what is kept. Pure functions of the samples; no locking and
// no accounting here (cache.go holds the entry's lock, lru.go its bytes).

func (e *entry) reset() {
	e.series, e.warns, e.infos = map[string]*series{}, nil, nil
	e.start, e.end, e.trusted = 1<<62, -1<<62, -1<<62
	e.fetchedAt = time.Time{}
}

// floor is the last grid time at or before t.
func (e *entry) floor(t int64) int64 { return t - mod(t-e.phase, e.step) }

// merge replaces what the extent holds in [from, to] with a's samples and returns how
// many samples a brought.
func (e *entry) merge(a *promclient.Answer, from, to int64) int64 {
	for _, s := range e.series {
		s.Series = without(s.Series, from, to)
	}
	for _, as := range a.Series {
		ns := newSeries(as)
		if old, ok := e.series[ns.key()]; ok {
			old.add(ns.Series)
		} else {
			e.series[ns.key()] = ns
		}
	}
	shareTimes(e.series)
	e.warns = union(e.warns, a.Warnings)
	e.infos = union(e.infos, a.Infos)
	return int64(a.Points())
}

// trim drops what lies more than one request span before the request, so an extent that
// follows a refreshing dashboard does not grow without end.
func (e *entry) trim(s, end int64) {
	span := end - s
	if e.start >= s-2*span {
		return
	}
	cut := e.floor(s-span) + e.step
	for k, sr := range e.series {
		sr.Series = without(sr.Series, -1<<63, cut-1)
		if len(sr.T) == 0 && len(sr.Histograms) == 0 {
			delete(e.series, k)
		}
	}
	shareTimes(e.series)
	e.start = cut
}

// answer is the extent's samples in [from, to] as a matrix answer: series in label order,
// those without samples there left out. It shares the extent's sample arrays.
func (e *entry) answer(from, to int64) *promclient.Answer {
	sorted := make([]*series, 0, len(e.series))
	for _, s := range e.series {
		sorted = append(sorted, s)
	}
	slices.SortFunc(sorted, func(a, b *series) int { return compareLabels(a.pairs, b.pairs) })
	a := &promclient.Answer{Type: "matrix", Warnings: slices.Clone(e.warns), Infos: slices.Clone(e.infos)}
	for _, s := range sorted {
		if in := within(s.Series, from, to); len(in.T) > 0 || len(in.Histograms) > 0 {
			a.Series = append(a.Series, in)
		}
	}
	return a
}

func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// series is one labelled series of an extent: its samples in time order. The sample
// slices are never written once set, because the answers the cache hands out share them
// (and series with the same times share their T): a merge or a trim builds new ones.
type series struct {
	pairs []string // name, value, name, value... sorted by name: the series' key and order
	promclient.Series
}

func newSeries(s promclient.Series) *series {
	return &series{pairs: labelPairs(s.Labels), Series: inTimeOrder(s)}
}

// labelPairs is name, value, name, value... sorted by name.
func labelPairs(ls data.Labels) []string {
	names := make([]string, 0, len(ls))
	for k := range ls {
		names = append(names, k)
	}
	slices.Sort(names)
	pairs := make([]string, 0, 2*len(names))
	for _, k := range names {
		pairs = append(pairs, k, ls[k])
	}
	return pairs
}

func (s *series) key() string { return strings.Join(s.pairs, "\xff") }

// compareLabels orders label sets as Prometheus orders its results: pair by pair, name
// then value, the shorter set first when one is a prefix of the other.
func compareLabels(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func histTimes(hs []promclient.Histogram) []int64 {
	ts := make([]int64, len(hs))
	for i, h := range hs {
		ts[i] = h.T
	}
	return ts
}

// inTimeOrder is s with its samples sorted by time (ties in the order given); s itself
// when they already are, as Prometheus gives them.
func inTimeOrder(s promclient.Series) promclient.Series {
	if !slices.IsSorted(s.T) {
		order := timeOrder(s.T)
		s.T, s.V = pick(order, s.T, nil), pick(order, s.V, nil)
	}
	if ts := histTimes(s.Histograms); !slices.IsSorted(ts) {
		s.Histograms = pick(timeOrder(ts), s.Histograms, nil)
	}
	return s
}

// timeOrder is the indexes of times in time order, ties in the order given.
func timeOrder(times []int64) []int {
	order := make([]int, len(times))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(times[a], times[b]) })
	return order
}

// merged is the order of the union of two time-ordered sample lists: each entry an index
// into a (≥ 0) or the complement of an index into b; a's sample first on a tie.
func merged(a, b []int64) []int {
	order := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || i < len(a) && a[i] <= b[j] {
			order = append(order, i)
			i++
		} else {
			order = append(order, ^j)
			j++
		}
	}
	return order
}

// pick lays out a's and b's elements in order (see merged), in a new slice.
func pick[T any](order []int, a, b []T) []T {
	if len(order) == 0 {
		return nil
	}
	out := make([]T, len(order))
	for k, i := range order {
		if i >= 0 {
			out[k] = a[i]
		} else {
			out[k] = b[^i]
		}
	}
	return out
}

// add merges b's samples (in time order) into s's.
func (s *series) add(b promclient.Series) {
	if len(b.T) > 0 {
		order := merged(s.T, b.T)
		s.T, s.V = pick(order, s.T, b.T), pick(order, s.V, b.V)
	}
	if len(b.Histograms) > 0 {
		s.Histograms = pick(merged(histTimes(s.Histograms), histTimes(b.Histograms)), s.Histograms, b.Histograms)
	}
}

// span is the index range of the time-ordered times within [from, to].
func span(times []int64, from, to int64) (lo, hi int) {
	lo, _ = slices.BinarySearch(times, from)
	hi, found := slices.BinarySearch(times, to)
	for found && hi < len(times) && times[hi] == to {
		hi++
	}
	return lo, hi
}

// without is s less its samples in [from, to]; s's slices themselves when none are there.
func without(s promclient.Series, from, to int64) promclient.Series {
	if lo, hi := span(s.T, from, to); lo < hi {
		s.T, s.V = slices.Concat(s.T[:lo], s.T[hi:]), slices.Concat(s.V[:lo], s.V[hi:])
	}
	if lo, hi := span(histTimes(s.Histograms), from, to); lo < hi {
		s.Histograms = slices.Concat(s.Histograms[:lo], s.Histograms[hi:])
	}
	return s
}

// within is s's samples in [from, to], sharing s's memory.
func within(s promclient.Series, from, to int64) promclient.Series {
	lo, hi := span(s.T, from, to)
	s.T, s.V = s.T[lo:hi:hi], s.V[lo:hi:hi]
	lo, hi = span(histTimes(s.Histograms), from, to)
	s.Histograms = s.Histograms[lo:hi:hi]
	return s
}

// shareTimes gives series with the same times one T array (an answer's series are
// usually on one grid), so the extent holds one copy. It compares with a few distinct
// arrays only, which covers the answers of one or a few grids.
func shareTimes(all map[string]*series) {
	var distinct [][]int64
	for _, s := range all {
		i := slices.IndexFunc(distinct, func(d []int64) bool { return sameTimes(d, s.T) })
		switch {
		case i >= 0:
			s.T = distinct[i]
		case len(distinct) < 4:
			distinct = append(distinct, s.T)
		}
	}
}

func sameTimes(a, b []int64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b))
}
