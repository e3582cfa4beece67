package rcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data/utils/jsoniter"
)

// point is one float sample: its time in milliseconds and its value. The value is kept
// as a float64 (a third of the text's memory); written back in the shortest form that
// reads as the same float64, so the converter reads exactly what the API sent.
type point struct {
	t int64
	v float64
}

// hpoint is one native histogram sample, its object kept as the API wrote it.
type hpoint struct {
	t   int64
	raw string
}

// series is one labelled series: the metric object as written, its sorted label pairs
// (the order Prometheus sorts results in) and its samples in time order.
type series struct {
	metric string
	labels []string // name, value, name, value... sorted by name
	points []point
	hists  []hpoint
}

// matrix is a decoded success answer of a range query.
type matrix struct {
	series   []*series
	warnings []string
	infos    []string
}

var errNotMatrix = errors.New("rcache: not a success matrix answer")

// decodeMatrix reads a Prometheus success matrix while it arrives; anything else (or a
// body cut short, which the caller's client reports itself) is nil and is not kept.
func decodeMatrix(r io.Reader) *matrix {
	iter, err := jsoniter.Parse(jsoniter.ConfigDefault, r, 64<<10)
	if err != nil {
		return nil
	}
	m := &matrix{}
	// One scratch slice for all series' values, grown to the longest; each series keeps an
	// exactly sized copy, so a big answer leaves no regrown copies and a wide answer of
	// sparse series reserves nothing per series.
	var scratch []point
	var status, resultType string
	err = readObject(iter, func(key string) error {
		switch key {
		case "status":
			status, err = iter.ReadString()
			return err
		case "data":
			return readObject(iter, func(key string) error {
				switch key {
				case "resultType":
					resultType, err = iter.ReadString()
					return err
				case "result":
					return readArray(iter, func() error {
						s, err := readSeries(iter, &scratch)
						if err == nil {
							m.series = append(m.series, s)
						}
						return err
					})
				}
				return iter.Skip()
			})
		case "warnings":
			return readStrings(iter, &m.warnings)
		case "infos":
			return readStrings(iter, &m.infos)
		}
		return iter.Skip()
	})
	if err != nil || status != "success" || resultType != "matrix" {
		return nil
	}
	return m
}

func readSeries(iter *jsoniter.Iterator, scratch *[]point) (*series, error) {
	s := &series{}
	err := readObject(iter, func(key string) error {
		switch key {
		case "metric":
			raw, err := iter.SkipAndReturnBytes()
			if err != nil {
				return err
			}
			var labels map[string]string
			if err := json.Unmarshal(raw, &labels); err != nil {
				return err
			}
			s.metric, s.labels = string(compact(raw)), sortedLabels(labels)
			return nil
		case "values":
			buf := (*scratch)[:0]
			err := readSamples(iter, func(t int64) error {
				text, err := iter.ReadStringAsSlice()
				if err != nil {
					return err
				}
				v, err := strconv.ParseFloat(string(text), 64)
				buf = append(buf, point{t: t, v: v})
				return err
			})
			*scratch = buf
			s.points = slices.Clone(buf)
			return err
		case "histograms":
			return readSamples(iter, func(t int64) error {
				raw, err := iter.SkipAndReturnBytes()
				s.hists = append(s.hists, hpoint{t: t, raw: string(compact(raw))})
				return err
			})
		}
		return iter.Skip()
	})
	slices.SortStableFunc(s.points, func(a, b point) int { return cmpInt(a.t, b.t) })
	slices.SortStableFunc(s.hists, func(a, b hpoint) int { return cmpInt(a.t, b.t) })
	return s, err
}

// readSamples reads an array of [<unix seconds>, <value>] pairs, handing each time (ms)
// to value, which reads the value.
func readSamples(iter *jsoniter.Iterator, value func(t int64) error) error {
	return readArray(iter, func() error {
		if more, err := iter.ReadArray(); err != nil || !more {
			return errNotMatrix
		}
		secs, err := iter.ReadFloat64()
		if err != nil {
			return err
		}
		t := millis(secs)
		if more, err := iter.ReadArray(); err != nil || !more {
			return errNotMatrix
		}
		if err := value(t); err != nil {
			return err
		}
		if more, err := iter.ReadArray(); err != nil || more {
			return errNotMatrix
		}
		return nil
	})
}

func readObject(iter *jsoniter.Iterator, field func(key string) error) error {
	for {
		key, err := iter.ReadObject()
		if err != nil || key == "" {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
	}
}

func readArray(iter *jsoniter.Iterator, elem func() error) error {
	for {
		more, err := iter.ReadArray()
		if err != nil || !more {
			return err
		}
		if err := elem(); err != nil {
			return err
		}
	}
}

func readStrings(iter *jsoniter.Iterator, into *[]string) error {
	return readArray(iter, func() error {
		s, err := iter.ReadString()
		*into = append(*into, s)
		return err
	})
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// millis is a timestamp in seconds in milliseconds, rounded as the converter rounds it.
func millis(secs float64) int64 { return int64(secs*1000 + 0.5*sign(secs)) }

func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortedLabels(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]string, 0, 2*len(names))
	for _, k := range names {
		out = append(out, k, m[k])
	}
	return out
}

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

func (s *series) key() string { return strings.Join(s.labels, "\xff") }

// encode writes the series' samples within [from, to] (ms) as a Prometheus success
// matrix, series in label order, series without samples there left out.
func encode(series []*series, from, to int64, warnings, infos []string) []byte {
	n := 128
	for _, s := range series {
		n += len(s.metric) + 32 + 40*len(s.points)
		for _, h := range s.hists {
			n += len(h.raw) + 24
		}
	}
	b := make([]byte, 0, n)
	b = append(b, `{"status":"success","data":{"resultType":"matrix","result":[`...)
	first := true
	for _, s := range series {
		pts := within(s.points, from, to, func(p point) int64 { return p.t })
		hs := within(s.hists, from, to, func(h hpoint) int64 { return h.t })
		if len(pts) == 0 && len(hs) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"metric":`...)
		b = append(b, s.metric...)
		if len(pts) > 0 {
			b = append(b, `,"values":[`...)
			for i, p := range pts {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendTime(b, p.t)
				b = append(b, '"')
				b = appendValue(b, p.v)
				b = append(b, `"]`...)
			}
			b = append(b, ']')
		}
		if len(hs) > 0 {
			b = append(b, `,"histograms":[`...)
			for i, h := range hs {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendTime(b, h.t)
				b = append(b, h.raw...)
				b = append(b, ']')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `]}`...)
	for _, list := range []struct {
		key  string
		vals []string
	}{{"warnings", warnings}, {"infos", infos}} {
		if len(list.vals) > 0 {
			js, _ := json.Marshal(list.vals)
			b = append(b, `,"`+list.key+`":`...)
			b = append(b, js...)
		}
	}
	return append(b, '}')
}

// within is the part of samples (in time order) with times in [from, to].
func within[T any](samples []T, from, to int64, at func(T) int64) []T {
	lo, _ := slices.BinarySearchFunc(samples, from, func(x T, t int64) int { return cmpInt(at(x), t) })
	hi, found := slices.BinarySearchFunc(samples, to, func(x T, t int64) int { return cmpInt(at(x), t) })
	if found {
		hi++
	}
	return samples[lo:hi]
}

// appendTime writes `[<seconds>,` for a time in ms.
func appendTime(b []byte, ms int64) []byte {
	b = append(b, '[')
	b = strconv.AppendFloat(b, float64(ms)/1000, 'f', -1, 64)
	return append(b, ',')
}

// appendValue writes a value as Prometheus does: the shortest decimal that reads back as
// the same float64, NaN and ±Inf by name.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// size estimates a series' memory in bytes.
func (s *series) size() int64 {
	n := int64(len(s.metric)) + 64
	for _, l := range s.labels {
		n += int64(len(l)) + 16
	}
	n += 16 * int64(cap(s.points))
	for _, h := range s.hists {
		n += int64(len(h.raw)) + 40
	}
	return n
}
