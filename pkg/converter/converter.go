// Package converter reads Prometheus HTTP API query answers and turns them into data
// frames shaped the way Grafana's panels, Explore and alerting expect from a Prometheus
// datasource. It is the one reader of an answer's resultType and result: a body is read
// once, in one forward pass while it arrives, into an Answer (the samples, decoded); the
// frames are built from an Answer, so a cached Answer gives the same frames as a fetched one.
package converter

import (
	"io"
	"slices"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/data/utils/jsoniter"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// DefaultMaxPoints bounds the samples one answer may hold (decoded, at most 16 bytes each,
// a time and a value, and 8 more in frames: under 50 MB), whatever the body's size.
const DefaultMaxPoints = 2_000_000

// Answer is a decoded success answer of a query or query_range call.
type Answer struct {
	Type string // resultType: matrix, vector, scalar or string
	// Series are a matrix's or vector's series in the answer's order; a scalar is one
	// series without labels, a string one series whose one time goes with Text.
	Series          []Series
	Text            string
	Warnings, Infos []string
}

// Series is one series' labels (nil when the answer gave none) and samples in the order
// given: float samples at times T (Unix milliseconds) with values V, and native histograms.
// Series with the same times may share one T array: an Answer is read only.
type Series struct {
	Labels     data.Labels
	T          []int64
	V          []float64
	Histograms []Histogram
}

// Histogram is one native histogram sample.
type Histogram struct {
	T       int64 // Unix milliseconds
	Buckets []Bucket
}

// Bucket is one histogram bucket: bounds, count and Prometheus' boundary rule (0 open
// left, 1 open right, 2 open both, 3 closed both).
type Bucket struct {
	Lower, Upper, Count float64
	Rule                int8
}

// Points is the number of samples, float and histogram, the answer holds.
func (a *Answer) Points() int {
	n := 0
	for _, s := range a.Series {
		n += len(s.V) + len(s.Histograms)
	}
	return n
}

// ReadAnswer reads a query or query_range answer while it arrives. It reads the envelope
// with promclient's one reader, so errors are promclient's: an *APIError for an error
// envelope, a *MalformedError for a body that is not a Prometheus answer, a *TooLargeError
// past maxPoints samples (≤ 0: DefaultMaxPoints).
func ReadAnswer(r io.Reader, maxPoints int) (*Answer, error) {
	if maxPoints <= 0 {
		maxPoints = DefaultMaxPoints
	}
	d := &decoder{maxPoints: maxPoints}
	env, err := promclient.ReadEnvelope(r, d.readData)
	if err != nil {
		return nil, err
	}
	d.a.Warnings, d.a.Infos = env.Warnings, env.Infos
	return &d.a, nil
}

// Decode is ReadAnswer as a promclient.Decode that leaves the answer in *into (read
// afresh on every attempt).
func Decode(into *Answer) promclient.Decode {
	return func(r io.Reader) error {
		a, err := ReadAnswer(r, DefaultMaxPoints)
		if err != nil {
			*into = Answer{}
			return err
		}
		*into = *a
		return nil
	}
}

func formatErrorf(format string, args ...any) error { return promclient.Malformed(format, args...) }

// decoder fills an Answer. The sample slices are scratch space reused for every series:
// each series keeps an exactly sized copy, so a long matrix costs no repeated growth; a
// series with the previous one's times shares its copy (lastTimes), as the series of an
// answer on one step grid do.
type decoder struct {
	a         Answer
	maxPoints int
	points    int
	sawResult bool

	lastTimes []int64
	times     []int64
	values    []float64
	hists     []Histogram
	buckets   []Bucket
}

// readData reads {"resultType": ..., "result": ...}. A result that arrives before its
// resultType is kept as raw bytes and parsed once the type is known.
func (d *decoder) readData(iter *jsoniter.Iterator) error {
	next, err := iter.WhatIsNext()
	if err != nil {
		return err
	}
	if next != jsoniter.ObjectValue {
		return iter.Skip()
	}
	var pending []byte
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return err
		}
		if key == "" {
			break
		}
		switch key {
		case "resultType":
			if d.a.Type, err = promclient.ReadNullableString(iter); err != nil {
				return err
			}
			if pending != nil {
				if err := d.readPending(pending); err != nil {
					return err
				}
				pending = nil
			}
		case "result":
			if d.a.Type == "" {
				if pending, err = iter.SkipAndReturnBytes(); err != nil {
					return err
				}
				continue
			}
			if err := d.readResult(iter); err != nil {
				return err
			}
		default:
			if err := iter.Skip(); err != nil {
				return err
			}
		}
	}
	if pending != nil {
		return formatErrorf("the Prometheus response has a result but no resultType")
	}
	return nil
}

func (d *decoder) readPending(raw []byte) error {
	iter, err := jsoniter.ParseBytes(jsoniter.ConfigDefault, raw)
	if err != nil {
		return err
	}
	return d.readResult(iter)
}

func (d *decoder) readResult(iter *jsoniter.Iterator) error {
	if d.sawResult {
		return formatErrorf("the Prometheus response has more than one result")
	}
	d.sawResult = true
	next, err := iter.WhatIsNext()
	if err != nil {
		return err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return err
	}
	switch d.a.Type {
	case "matrix", "vector":
		return forEachElement(iter, d.readSeries)
	case "scalar":
		t, v, err := readFloatSample(iter)
		if err != nil {
			return err
		}
		d.a.Series = append(d.a.Series, Series{T: []int64{t}, V: []float64{v}})
		return nil
	case "string":
		return d.readString(iter)
	default:
		return formatErrorf("the Prometheus response has resultType %q, which is not one of matrix, vector, scalar, string", d.a.Type)
	}
}

// forEachElement calls read once per element of the array at iter; read must consume
// exactly one element.
func forEachElement(iter *jsoniter.Iterator, read func(*jsoniter.Iterator) error) error {
	for {
		more, err := iter.ReadArray()
		if err != nil || !more {
			return err
		}
		if err := read(iter); err != nil {
			return err
		}
	}
}

// readSeries reads one {"metric":{...}, "values"|"value"|"histograms"|"histogram": ...}
// item in whatever key order it comes.
func (d *decoder) readSeries(iter *jsoniter.Iterator) error {
	d.times, d.values, d.hists = d.times[:0], d.values[:0], d.hists[:0]
	var labels data.Labels
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return err
		}
		if key == "" {
			break
		}
		switch key {
		case "metric":
			labels, err = readLabels(iter)
		case "values":
			err = forEachElement(iter, d.readOneFloatSample)
		case "value":
			err = d.readOneFloatSample(iter)
		case "histograms":
			err = forEachElement(iter, d.readHistogramSample)
		case "histogram":
			err = d.readHistogramSample(iter)
		default:
			err = iter.Skip()
		}
		if err != nil {
			return err
		}
	}
	if !slices.Equal(d.times, d.lastTimes) {
		d.lastTimes = exact(d.times)
	}
	d.a.Series = append(d.a.Series, Series{Labels: labels, T: d.lastTimes, V: exact(d.values), Histograms: exact(d.hists)})
	return nil
}

// exact is an exactly sized copy of s; nil when s is empty.
func exact[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func readLabels(iter *jsoniter.Iterator) (data.Labels, error) {
	next, err := iter.WhatIsNext()
	if err != nil {
		return nil, err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return nil, err
	}
	labels := data.Labels{}
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return nil, err
		}
		if key == "" {
			return labels, nil
		}
		v, err := promclient.ReadNullableString(iter)
		if err != nil {
			return nil, err
		}
		labels[key] = v
	}
}

// countPoint refuses the sample that would take the answer past maxPoints.
func (d *decoder) countPoint() error {
	if d.points++; d.points > d.maxPoints {
		return tooLarge(d.maxPoints)
	}
	return nil
}

func tooLarge(maxPoints int) error {
	return &promclient.TooLargeError{Limit: int64(maxPoints), Unit: "points"}
}

func (d *decoder) readOneFloatSample(iter *jsoniter.Iterator) error {
	if err := d.countPoint(); err != nil {
		return err
	}
	t, v, err := readFloatSample(iter)
	if err != nil {
		return err
	}
	d.times = append(d.times, t)
	d.values = append(d.values, v)
	return nil
}

// readFloatSample reads [<unix seconds>, "<value>"].
func readFloatSample(iter *jsoniter.Iterator) (int64, float64, error) {
	t, err := openSample(iter)
	if err != nil {
		return 0, 0, err
	}
	raw, err := iter.ReadStringAsSlice()
	if err != nil {
		return 0, 0, err
	}
	v, err := parseValue(raw)
	if err != nil {
		return 0, 0, err
	}
	return t, v, closeSample(iter)
}

// openSample opens a [<unix seconds>, <value>] sample array, reads its timestamp (in
// milliseconds) and leaves iter at the value.
func openSample(iter *jsoniter.Iterator) (int64, error) {
	if more, err := iter.ReadArray(); err != nil || !more {
		return 0, sampleShapeError(err)
	}
	secs, err := iter.ReadFloat64()
	if err != nil {
		return 0, err
	}
	t, err := secondsToMillis(secs)
	if err != nil {
		return 0, err
	}
	if more, err := iter.ReadArray(); err != nil || !more {
		return 0, sampleShapeError(err)
	}
	return t, nil
}

// closeSample skips anything after the value and consumes the closing bracket.
func closeSample(iter *jsoniter.Iterator) error {
	return forEachElement(iter, (*jsoniter.Iterator).Skip)
}

func sampleShapeError(err error) error {
	if err != nil {
		return err
	}
	return formatErrorf("a sample is not a [timestamp, value] pair")
}

// maxSeconds keeps timestamps inside what time.Time and int64 milliseconds represent.
const maxSeconds = 1e14

func secondsToMillis(secs float64) (int64, error) {
	if !(secs > -maxSeconds && secs < maxSeconds) {
		return 0, formatErrorf("sample timestamp %v is not a Unix time in seconds", secs)
	}
	// Prometheus timestamps have millisecond precision; rounding undoes float error.
	ms := secs * 1000
	if ms < 0 {
		ms -= 0.5
	} else {
		ms += 0.5
	}
	return int64(ms), nil
}

func (d *decoder) readString(iter *jsoniter.Iterator) error {
	t, err := openSample(iter)
	if err != nil {
		return err
	}
	s, err := iter.ReadString()
	if err != nil {
		return err
	}
	if err := closeSample(iter); err != nil {
		return err
	}
	d.a.Series, d.a.Text = append(d.a.Series, Series{T: []int64{t}}), s
	return nil
}

// millisToTime is a sample time as the frames hold it.
func millisToTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
