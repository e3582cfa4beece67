package rcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// point is one sample: its time in milliseconds and its value exactly as the API wrote
// it (a quoted float, or a native histogram object), so re-encoding changes nothing the
// converter reads.
type point struct {
	t    int64
	raw  string
	hist bool
}

// series is one labelled series: the metric object as written, its sorted label pairs
// (the order Prometheus sorts results in) and its points in time order.
type series struct {
	metric string
	labels []string // name, value, name, value... sorted by name
	points []point
}

// matrix is a decoded success answer of a range query.
type matrix struct {
	series   []*series
	warnings []string
	infos    []string
}

var errNotMatrix = errors.New("rcache: not a success matrix answer")

type rawAnswer struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric     json.RawMessage     `json:"metric"`
			Values     [][]json.RawMessage `json:"values"`
			Histograms [][]json.RawMessage `json:"histograms"`
		} `json:"result"`
	} `json:"data"`
	Warnings []string `json:"warnings"`
	Infos    []string `json:"infos"`
}

// decodeMatrix reads a Prometheus success matrix; anything else is errNotMatrix and is
// passed through uncached.
func decodeMatrix(body []byte) (*matrix, error) {
	var a rawAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.Status != "success" || a.Data.ResultType != "matrix" {
		return nil, errNotMatrix
	}
	m := &matrix{warnings: a.Warnings, infos: a.Infos}
	for _, r := range a.Data.Result {
		var labels map[string]string
		if err := json.Unmarshal(r.Metric, &labels); err != nil {
			return nil, errNotMatrix
		}
		s := &series{metric: string(compact(r.Metric)), labels: sortedLabels(labels)}
		for i, list := range [][][]json.RawMessage{r.Values, r.Histograms} {
			for _, pair := range list {
				if len(pair) != 2 {
					return nil, errNotMatrix
				}
				t, err := parseMillis(pair[0])
				if err != nil {
					return nil, errNotMatrix
				}
				s.points = append(s.points, point{t: t, raw: string(compact(pair[1])), hist: i == 1})
			}
		}
		slices.SortStableFunc(s.points, func(a, b point) int { return cmpInt(a.t, b.t) })
		m.series = append(m.series, s)
	}
	return m, nil
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func parseMillis(raw json.RawMessage) (int64, error) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, err
	}
	return int64(f*1000 + 0.5*sign(f)), nil
}

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

// encode writes the series' points within [from, to] (ms) as a Prometheus success matrix,
// series in label order, series without points there left out.
func encode(series []*series, from, to int64, warnings, infos []string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	first := true
	for _, s := range series {
		lo, _ := slices.BinarySearchFunc(s.points, from, func(p point, t int64) int { return cmpInt(p.t, t) })
		hi, found := slices.BinarySearchFunc(s.points, to, func(p point, t int64) int { return cmpInt(p.t, t) })
		if found {
			hi++
		}
		pts := s.points[lo:hi]
		if len(pts) == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(`{"metric":`)
		b.WriteString(s.metric)
		for _, hist := range []bool{false, true} {
			n := 0
			for _, p := range pts {
				if p.hist != hist {
					continue
				}
				if n == 0 {
					if hist {
						b.WriteString(`,"histograms":[`)
					} else {
						b.WriteString(`,"values":[`)
					}
				} else {
					b.WriteByte(',')
				}
				n++
				b.WriteByte('[')
				b.WriteString(strconv.FormatFloat(float64(p.t)/1000, 'f', -1, 64))
				b.WriteByte(',')
				b.WriteString(p.raw)
				b.WriteByte(']')
			}
			if n > 0 {
				b.WriteByte(']')
			}
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	for _, list := range []struct {
		key  string
		vals []string
	}{{"warnings", warnings}, {"infos", infos}} {
		if len(list.vals) > 0 {
			js, _ := json.Marshal(list.vals)
			b.WriteString(`,"` + list.key + `":`)
			b.Write(js)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// size estimates a series' memory in bytes.
func (s *series) size() int64 {
	n := int64(len(s.metric)) + 64
	for _, l := range s.labels {
		n += int64(len(l)) + 16
	}
	for _, p := range s.points {
		n += int64(len(p.raw)) + 40
	}
	return n
}
