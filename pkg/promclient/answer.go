package promclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/data/utils/jsoniter"
)

// This file is longer than the others on purpose: it is the one reader of an answer, a
// single forward pass over the body as it arrives (envelope, resultType, series, samples,
// native histograms), and its states share the iterator and the step-grid bookkeeping;
// split by section, each part would need the others' internals.

// Envelope is what the top level of an answer says besides its data: the Prometheus
// fields, and the AWS-style fields ({"__type","message"}) CloudWatch and AWS front ends
// use for their own errors.
type Envelope struct {
	Status, ErrorType, Error  string
	AWSType, AWSMessage, Code string
	Warnings, Infos           []string
	HasData                   bool
}

// ReadEnvelope is the one reader of Prometheus API answers (panels, diagnosis, health and
// errors all go through it). It reads r in one forward pass; data, when not nil, is
// called with the iterator at the "data" value and must consume exactly that value.
// Errors: *MalformedError when r is not a Prometheus answer, *APIError for an error
// envelope, or whatever data returned.
func ReadEnvelope(r io.Reader, data func(*jsoniter.Iterator) error) (Envelope, error) {
	var env Envelope
	iter, err := jsoniter.Parse(jsoniter.ConfigDefault, r, 64*1024)
	if err != nil {
		return env, syntaxError(err)
	}
	next, err := iter.WhatIsNext()
	if err != nil {
		return env, syntaxError(err)
	}
	if next != jsoniter.ObjectValue {
		return env, Malformed("the response is not a JSON object: expected a Prometheus API response such as {\"status\":\"success\",\"data\":{...}}")
	}
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return env, syntaxError(err)
		}
		if key == "" {
			break
		}
		switch key {
		case "status":
			env.Status, err = ReadNullableString(iter)
		case "errorType":
			env.ErrorType, err = ReadNullableString(iter)
		case "error":
			env.Error, err = ReadNullableString(iter)
		case "__type":
			env.AWSType, err = ReadNullableString(iter)
		case "message", "Message":
			env.AWSMessage, err = ReadNullableString(iter)
		case "code":
			env.Code, err = ReadNullableString(iter)
		case "warnings":
			env.Warnings, err = readStringArray(iter, env.Warnings)
		case "infos":
			env.Infos, err = readStringArray(iter, env.Infos)
		case "data":
			env.HasData = true
			if data != nil {
				err = data(iter)
			} else {
				err = iter.Skip()
			}
		default:
			err = iter.Skip()
		}
		if err != nil {
			return env, wrapReadError(err)
		}
	}
	return env, env.check()
}

// check decides whether a complete envelope is a success.
func (env Envelope) check() error {
	switch {
	case env.Status == "error" || env.Status == "" && env.Error != "":
		return &APIError{Type: env.ErrorType, Message: firstNonEmpty(env.Error, "(no message)")}
	case env.Status == "success":
		if !env.HasData {
			return Malformed("the Prometheus response has status success but no data")
		}
		return nil
	case env.Status == "" && env.AWSMessage != "":
		return &APIError{Type: awsType(env.AWSType), Message: env.AWSMessage}
	case env.Status == "":
		return Malformed("the response has no status field: expected a Prometheus API response such as {\"status\":\"success\",\"data\":{...}}")
	}
	return Malformed("the Prometheus response has an unknown status %q (want success or error)", env.Status)
}

// MalformedError says a body is not a Prometheus API answer (bad JSON or the wrong
// shape). In a 2xx answer it is a transient upstream fault: the call is retried.
type MalformedError struct{ msg string }

func (e *MalformedError) Error() string { return e.msg }

// Malformed builds a *MalformedError; readers of the data value use it for shape errors.
func Malformed(format string, args ...any) error {
	return &MalformedError{msg: fmt.Sprintf(format, args...)}
}

// syntaxError reports malformed JSON. The iterator's message ends in a window of raw body
// bytes whose position depends on buffering (and could hold anything); only the
// description before it is kept.
func syntaxError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ", error found in #"); i > 0 {
		msg = msg[:i]
	}
	return &MalformedError{msg: "the response is not a valid Prometheus API response (" + msg + ")"}
}

// wrapReadError keeps typed errors (ours and the data reader's) and labels the iterator's.
func wrapReadError(err error) error {
	var (
		me *MalformedError
		ae *APIError
		te *TooLargeError
	)
	if errors.As(err, &me) || errors.As(err, &ae) || errors.As(err, &te) {
		return err
	}
	return syntaxError(err)
}

// ReadNullableString reads a string or null ("").
func ReadNullableString(iter *jsoniter.Iterator) (string, error) {
	next, err := iter.WhatIsNext()
	if err != nil {
		return "", err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return "", err
	}
	return iter.ReadString()
}

func readStringArray(iter *jsoniter.Iterator, into []string) ([]string, error) {
	next, err := iter.WhatIsNext()
	if err != nil {
		return into, err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return into, err
	}
	for {
		more, err := iter.ReadArray()
		if err != nil || !more {
			return into, err
		}
		s, err := ReadNullableString(iter)
		if err != nil {
			return into, err
		}
		into = append(into, s)
	}
}

// Data returns a Decode that checks the envelope and unmarshals its data value into v
// with encoding/json (nil v: only check). For small answers: discovery, health, diagnosis.
func Data(v any) Decode {
	return func(r io.Reader) error {
		_, err := ReadEnvelope(r, func(iter *jsoniter.Iterator) error {
			raw, err := iter.SkipAndReturnBytes()
			if err != nil || v == nil {
				return err
			}
			if err := json.Unmarshal(raw, v); err != nil {
				return Malformed("CloudWatch's answer has an unexpected data field (%v)", err)
			}
			return nil
		})
		return err
	}
}

// Raw returns a Decode that keeps the body as it came, for pass-through answers.
func Raw(into *[]byte) Decode {
	return func(r io.Reader) error {
		b, err := io.ReadAll(r)
		*into = b
		return err
	}
}

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

// ReadAnswer reads a query or query_range answer while it arrives, envelope and result in
// one pass. Errors: an *APIError for an error envelope, a *MalformedError for a body that
// is not a Prometheus answer, a *TooLargeError past maxPoints samples (≤ 0:
// DefaultMaxPoints).
func ReadAnswer(r io.Reader, maxPoints int) (*Answer, error) {
	if maxPoints <= 0 {
		maxPoints = DefaultMaxPoints
	}
	d := &decoder{maxPoints: maxPoints}
	env, err := ReadEnvelope(r, d.readData)
	if err != nil {
		return nil, err
	}
	d.a.Warnings, d.a.Infos = env.Warnings, env.Infos
	return &d.a, nil
}

// DecodeAnswer is ReadAnswer as a Decode that leaves the answer in *into (read afresh on
// every attempt).
func DecodeAnswer(into *Answer) Decode {
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
			if d.a.Type, err = ReadNullableString(iter); err != nil {
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
		return Malformed("the Prometheus response has a result but no resultType")
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
		return Malformed("the Prometheus response has more than one result")
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
		return Malformed("the Prometheus response has resultType %q, which is not one of matrix, vector, scalar, string", d.a.Type)
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
		v, err := ReadNullableString(iter)
		if err != nil {
			return nil, err
		}
		labels[key] = v
	}
}

// countPoint refuses the sample that would take the answer past maxPoints.
func (d *decoder) countPoint() error {
	if d.points++; d.points > d.maxPoints {
		return &TooLargeError{Limit: int64(d.maxPoints), Unit: "points"}
	}
	return nil
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
	return Malformed("a sample is not a [timestamp, value] pair")
}

// maxSeconds keeps timestamps inside what time.Time and int64 milliseconds represent.
const maxSeconds = 1e14

func secondsToMillis(secs float64) (int64, error) {
	if !(secs > -maxSeconds && secs < maxSeconds) {
		return 0, Malformed("sample timestamp %v is not a Unix time in seconds", secs)
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

// parseValue reads a sample value as Prometheus writes it: a decimal string, or NaN,
// +Inf, -Inf.
func parseValue(raw []byte) (float64, error) {
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		s := string(raw)
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return 0, Malformed("sample value %q is not a number", s)
	}
	return v, nil
}

// readHistogramSample reads [<unix seconds>, {"count":..., "sum":..., "buckets":[...]}].
func (d *decoder) readHistogramSample(iter *jsoniter.Iterator) error {
	if err := d.countPoint(); err != nil {
		return err
	}
	t, err := openSample(iter)
	if err != nil {
		return err
	}
	next, err := iter.WhatIsNext()
	if err != nil {
		return err
	}
	if next != jsoniter.ObjectValue {
		return Malformed("a histogram sample's value is not an object with count, sum and buckets")
	}
	d.buckets = d.buckets[:0]
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return err
		}
		if key == "" {
			break
		}
		if key != "buckets" {
			if err := iter.Skip(); err != nil {
				return err
			}
			continue
		}
		if err := d.readBuckets(iter); err != nil {
			return err
		}
	}
	d.hists = append(d.hists, Histogram{T: t, Buckets: exact(d.buckets)})
	return closeSample(iter)
}

// readBuckets reads [[<boundary rule>, "<lower>", "<upper>", "<count>"], ...].
func (d *decoder) readBuckets(iter *jsoniter.Iterator) error {
	next, err := iter.WhatIsNext()
	if err != nil {
		return err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return err
	}
	for {
		more, err := iter.ReadArray()
		if err != nil || !more {
			return err
		}
		if more, err := iter.ReadArray(); err != nil || !more {
			return bucketShapeError(err)
		}
		rule, err := iter.ReadInt()
		if err != nil {
			return err
		}
		if rule < 0 || rule > 3 {
			return Malformed("histogram bucket boundary rule %d is not 0-3", rule)
		}
		var nums [3]float64
		for i := range nums {
			if more, err := iter.ReadArray(); err != nil || !more {
				return bucketShapeError(err)
			}
			raw, err := iter.ReadStringAsSlice()
			if err != nil {
				return err
			}
			if nums[i], err = parseValue(raw); err != nil {
				return err
			}
		}
		if err := closeSample(iter); err != nil {
			return err
		}
		d.buckets = append(d.buckets, Bucket{Lower: nums[0], Upper: nums[1], Count: nums[2], Rule: int8(rule)})
	}
}

func bucketShapeError(err error) error {
	if err != nil {
		return err
	}
	return Malformed("a histogram bucket is not a [boundary rule, lower, upper, count] array")
}
