// Package converter turns a Prometheus HTTP API query response into data frames shaped
// the way Grafana's panels, Explore and alerting expect from a Prometheus datasource. It
// reads the body in one forward pass with the plugin SDK's jsoniter wrapper, never
// holding the whole document or an intermediate object tree in memory.
package converter

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/data/utils/jsoniter"
)

// SeriesCap is CloudWatch's maximum number of series in one query response.
const SeriesCap = 500

// Options carries the query context the frames describe.
type Options struct {
	// Expr is the expression as executed (variables expanded). It is shown in the query
	// inspector and stands in for the legend of a series without labels.
	Expr string
	// LegendFormat is the panel's legend: "{{label}}" templates, "__auto" or "".
	LegendFormat string
	// Step is the query step (the range step, or the calculated step of an instant query).
	Step time.Duration
	// Limit is the limit parameter sent with the query; 0 or anything above SeriesCap
	// means CloudWatch's own cap applies.
	Limit int
}

// PrometheusError is an error envelope from the API ({"status":"error",...}).
type PrometheusError struct {
	Type    string
	Message string
}

func (e *PrometheusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "the upstream reported an error without a message"
	}
	if e.Type == "" {
		return msg
	}
	return e.Type + ": " + msg
}

// Read converts a query or query_range response body into frames. A Prometheus error
// envelope comes back as a *PrometheusError; a body that is not a Prometheus response
// comes back as an error that says what was wrong with it. Either is the upstream's
// fault, so callers report it as a downstream error.
func Read(r io.Reader, opts Options) (data.Frames, error) {
	iter, err := jsoniter.Parse(jsoniter.ConfigDefault, r, 64*1024)
	if err != nil {
		return nil, readError(err)
	}
	b := newBuilder(opts)
	env, err := b.readEnvelope(iter)
	if err != nil {
		return nil, err
	}
	return b.finish(env), nil
}

// readError reports malformed JSON. The iterator's message ends in a window of raw body
// bytes whose position depends on buffering; only the description before it is kept.
func readError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ", error found in #"); i > 0 {
		msg = msg[:i]
	}
	return fmt.Errorf("the response is not a valid Prometheus API response (%s)", msg)
}

// envelope is what the top level of the response says besides the result.
type envelope struct {
	status, errorType, errorMsg string
	// awsType and awsMessage come from an AWS-style error body ({"__type","message"})
	// that reached the converter despite its 2xx status.
	awsType, awsMessage string
	warnings, infos     []string
	sawData             bool
}

func (b *builder) readEnvelope(iter *jsoniter.Iterator) (envelope, error) {
	var env envelope
	next, err := iter.WhatIsNext()
	if err != nil {
		return env, readError(err)
	}
	if next != jsoniter.ObjectValue {
		return env, errors.New("the response is not a JSON object: expected a Prometheus API response such as {\"status\":\"success\",\"data\":{...}}")
	}
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return env, readError(err)
		}
		if key == "" {
			break
		}
		switch key {
		case "status":
			env.status, err = readNullableString(iter)
		case "errorType":
			env.errorType, err = readNullableString(iter)
		case "error":
			env.errorMsg, err = readNullableString(iter)
		case "__type":
			env.awsType, err = readNullableString(iter)
		case "message", "Message":
			env.awsMessage, err = readNullableString(iter)
		case "warnings":
			env.warnings, err = readStringArray(iter, env.warnings)
		case "infos":
			env.infos, err = readStringArray(iter, env.infos)
		case "data":
			env.sawData = true
			err = b.readData(iter)
		default:
			err = iter.Skip()
		}
		if err != nil {
			return env, wrapReadError(err)
		}
	}
	switch {
	case env.status == "error" || env.status == "" && env.errorMsg != "":
		return env, &PrometheusError{Type: env.errorType, Message: env.errorMsg}
	case env.status == "success":
		if !env.sawData {
			return env, errors.New("the Prometheus response has status success but no data")
		}
		return env, nil
	case env.status == "" && env.awsMessage != "":
		return env, &PrometheusError{Type: env.awsType, Message: env.awsMessage}
	case env.status == "":
		return env, errors.New("the response has no status field: expected a Prometheus API response such as {\"status\":\"success\",\"data\":{...}}")
	default:
		return env, fmt.Errorf("the Prometheus response has an unknown status %q (want success or error)", env.status)
	}
}

// wrapReadError leaves our own descriptive errors alone and labels the iterator's.
func wrapReadError(err error) error {
	var fe *formatError
	if errors.As(err, &fe) {
		return err
	}
	return readError(err)
}

// formatError is a structurally valid JSON value of the wrong shape.
type formatError struct{ msg string }

func (e *formatError) Error() string { return e.msg }

func formatErrorf(format string, args ...any) error {
	return &formatError{msg: fmt.Sprintf(format, args...)}
}

func readNullableString(iter *jsoniter.Iterator) (string, error) {
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
		s, err := readNullableString(iter)
		if err != nil {
			return into, err
		}
		into = append(into, s)
	}
}

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
			if b.resultType, err = readNullableString(iter); err != nil {
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
		b.addFloatSeries(nil)
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
	if len(b.values) > 0 || b.hist.len() == 0 {
		b.addFloatSeries(labels)
	}
	if b.hist.len() > 0 {
		b.addHistogramSeries(labels)
	}
	return nil
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
		v, err := readNullableString(iter)
		if err != nil {
			return nil, err
		}
		labels[key] = v
	}
}

func (b *builder) readOneFloatSample(iter *jsoniter.Iterator) error {
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
