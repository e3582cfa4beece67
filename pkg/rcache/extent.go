package rcache

import (
	"cmp"
	"slices"
	"strings"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// series is one labelled series of an extent: its samples in time order. The sample
// slices are never written once set, because the answers the cache hands out share them
// (and series with the same times share their T): a merge or a trim builds new ones.
type series struct {
	pairs []string // name, value, name, value... sorted by name: the series' key and order
	promclient.Series
}

func newSeries(s promclient.Series) *series {
	names := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		names = append(names, k)
	}
	slices.Sort(names)
	pairs := make([]string, 0, 2*len(names))
	for _, k := range names {
		pairs = append(pairs, k, s.Labels[k])
	}
	return &series{pairs: pairs, Series: inTimeOrder(s)}
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

// size is the series' memory in bytes: its samples and labels, and its label pairs; a T
// array in counted is not counted again.
func (s *series) size(counted map[*int64]bool) int64 {
	n := seriesSize(s.Series, counted) + 24
	for _, l := range s.pairs {
		n += int64(len(l)) + 16
	}
	return n
}

// seriesSize is a decoded series' memory in bytes: the labels map and the sample arrays
// as allocated, a T array in counted not again (series share them).
func seriesSize(s promclient.Series, counted map[*int64]bool) int64 {
	n := int64(136) // the series' slice headers and map header
	for k, v := range s.Labels {
		n += int64(len(k)+len(v)) + 48 // the strings, their headers, the map slot
	}
	if cap(s.T) > 0 && !counted[&s.T[:1][0]] {
		counted[&s.T[:1][0]] = true
		n += 8 * int64(cap(s.T))
	}
	n += 8 * int64(cap(s.V))
	for _, h := range s.Histograms {
		n += 32 + 32*int64(cap(h.Buckets))
	}
	return n
}
