// Package converter turns a Prometheus HTTP API query response into data frames shaped
// the way Grafana's panels, Explore and alerting expect from a Prometheus datasource. It
// reads the body in one forward pass, while it arrives, never holding the whole document
// or an intermediate object tree in memory.
package converter

import (
	"io"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/data/utils/jsoniter"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// DefaultMaxPoints bounds the samples one query's frames may hold (32 bytes each, a time
// and a value: about 64 MB of frames), whatever the body's size.
const DefaultMaxPoints = 2_000_000

// Options carries the query context the frames describe.
type Options struct {
	// Expr is the expression as executed (variables expanded). It is shown in the query
	// inspector and stands in for the legend of a series without labels.
	Expr string
	// LegendFormat is the panel's legend: "{{label}}" templates, "__auto" or "".
	LegendFormat string
	// Step is the query step (the range step, or the calculated step of an instant query).
	Step time.Duration
	// MaxPoints caps the samples of all frames; 0 means DefaultMaxPoints.
	MaxPoints int
	// AddLabels are set on every series (and scalar) that lacks them, before the legend
	// is formatted, so {{label}} and __auto legends show them (e.g. the region an answer
	// came from when a query spans regions).
	AddLabels data.Labels
}

// Read converts a query or query_range response body into frames, while the body arrives.
// It reads the envelope with promclient's one reader, so errors are promclient's: an
// *APIError for an error envelope, a *MalformedError for a body that is not a Prometheus
// answer, a *TooLargeError beyond MaxPoints.
func Read(r io.Reader, opts Options) (data.Frames, error) {
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = DefaultMaxPoints
	}
	b := newBuilder(opts)
	env, err := promclient.ReadEnvelope(r, b.readData)
	if err != nil {
		return nil, err
	}
	return b.finish(env), nil
}

// Decode is Read as a promclient.Decode that leaves its frames in *into.
func Decode(opts Options, into *data.Frames) promclient.Decode {
	return func(r io.Reader) error {
		frames, err := Read(r, opts)
		*into = frames
		return err
	}
}

func formatErrorf(format string, args ...any) error { return promclient.Malformed(format, args...) }

// readData reads {"resultType": ..., "result": ...}. A result that arrives before its
// resultType is kept as raw bytes and parsed once the type is known.
func (b *builder) readData(iter *jsoniter.Iterator) error {
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
			if b.resultType, err = promclient.ReadNullableString(iter); err != nil {
				return err
			}
			if pending != nil {
				if err := b.readPending(pending); err != nil {
					return err
				}
				pending = nil
			}
		case "result":
			if b.resultType == "" {
				if pending, err = iter.SkipAndReturnBytes(); err != nil {
					return err
				}
				continue
			}
			if err := b.readResult(iter); err != nil {
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

func (b *builder) readPending(raw []byte) error {
	iter, err := jsoniter.ParseBytes(jsoniter.ConfigDefault, raw)
	if err != nil {
		return err
	}
	return b.readResult(iter)
}

func (b *builder) readResult(iter *jsoniter.Iterator) error {
	if b.sawResult {
		return formatErrorf("the Prometheus response has more than one result")
	}
	b.sawResult = true
	next, err := iter.WhatIsNext()
	if err != nil {
		return err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return err
	}
	switch b.resultType {
	case "matrix", "vector":
		return forEachElement(iter, b.readSeries)
	case "scalar":
		ts, v, err := readFloatSample(iter)
		if err != nil {
			return err
		}
		b.times = append(b.times[:0], ts)
		b.values = append(b.values[:0], v)
		b.addFloatSeries(b.withAdded(nil))
		return nil
	case "string":
		return b.readString(iter)
	default:
		return formatErrorf("the Prometheus response has resultType %q, which is not one of matrix, vector, scalar, string", b.resultType)
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
func (b *builder) readSeries(iter *jsoniter.Iterator) error {
	b.times, b.values = b.times[:0], b.values[:0]
	b.hist.reset()
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
			err = forEachElement(iter, b.readOneFloatSample)
		case "value":
			err = b.readOneFloatSample(iter)
		case "histograms":
			err = forEachElement(iter, b.readHistogramSample)
		case "histogram":
			err = b.readHistogramSample(iter)
		default:
			err = iter.Skip()
		}
		if err != nil {
			return err
		}
	}
	b.series++
	labels = b.withAdded(labels)
	if len(b.values) > 0 || b.hist.len() == 0 {
		b.addFloatSeries(labels)
	}
	if b.hist.len() > 0 {
		b.addHistogramSeries(labels)
	}
	return nil
}

// withAdded is labels with the AddLabels it lacks.
func (b *builder) withAdded(labels data.Labels) data.Labels {
	for k, v := range b.opts.AddLabels {
		if _, ok := labels[k]; ok {
			continue
		}
		if labels == nil {
			labels = data.Labels{}
		}
		labels[k] = v
	}
	return labels
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

// countPoint refuses the sample that would take the frames past MaxPoints.
func (b *builder) countPoint() error {
	if b.points++; b.points > b.opts.MaxPoints {
		return &promclient.TooLargeError{Limit: int64(b.opts.MaxPoints), Unit: "points"}
	}
	return nil
}

func (b *builder) readOneFloatSample(iter *jsoniter.Iterator) error {
	if err := b.countPoint(); err != nil {
		return err
	}
	ts, v, err := readFloatSample(iter)
	if err != nil {
		return err
	}
	b.times = append(b.times, ts)
	b.values = append(b.values, v)
	return nil
}

// readFloatSample reads [<unix seconds>, "<value>"].
func readFloatSample(iter *jsoniter.Iterator) (time.Time, float64, error) {
	ts, err := openSample(iter)
	if err != nil {
		return time.Time{}, 0, err
	}
	raw, err := iter.ReadStringAsSlice()
	if err != nil {
		return time.Time{}, 0, err
	}
	v, err := parseValue(raw)
	if err != nil {
		return time.Time{}, 0, err
	}
	return ts, v, closeSample(iter)
}

// openSample opens a [<unix seconds>, <value>] sample array, reads its timestamp and
// leaves iter at the value.
func openSample(iter *jsoniter.Iterator) (time.Time, error) {
	if more, err := iter.ReadArray(); err != nil || !more {
		return time.Time{}, sampleShapeError(err)
	}
	secs, err := iter.ReadFloat64()
	if err != nil {
		return time.Time{}, err
	}
	ts, err := secondsToTime(secs)
	if err != nil {
		return time.Time{}, err
	}
	if more, err := iter.ReadArray(); err != nil || !more {
		return time.Time{}, sampleShapeError(err)
	}
	return ts, nil
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

func secondsToTime(secs float64) (time.Time, error) {
	if !(secs > -maxSeconds && secs < maxSeconds) {
		return time.Time{}, formatErrorf("sample timestamp %v is not a Unix time in seconds", secs)
	}
	// Prometheus timestamps have millisecond precision; rounding undoes float error.
	ms := secs * 1000
	if ms < 0 {
		ms -= 0.5
	} else {
		ms += 0.5
	}
	return time.UnixMilli(int64(ms)).UTC(), nil
}

func (b *builder) readString(iter *jsoniter.Iterator) error {
	ts, err := openSample(iter)
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
	b.addStringResult(ts, s)
	return nil
}
