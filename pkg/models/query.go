package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// QueryTypeOf is the type a query runs as (Model.Type).
func QueryTypeOf(dq backend.DataQuery) (string, error) { return Decode(dq).Type() }

// Time ranges outside these years are not CloudWatch data (it keeps 15 months) and
// overflow step arithmetic; they are refused with a clear error.
var (
	minQueryTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxQueryTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// CheckTimeRange refuses a time range that is inverted or outside 1970–2199. A zero range
// (none given) passes.
func CheckTimeRange(refID string, tr backend.TimeRange) error {
	if tr.From.IsZero() && tr.To.IsZero() {
		return nil
	}
	for _, t := range []time.Time{tr.From, tr.To} {
		if t.Before(minQueryTime) || !t.Before(maxQueryTime) {
			return fmt.Errorf("query %s: the time range %s to %s lies outside the years 1970–2199: pick a time range within them",
				refName(refID), tr.From.UTC().Format(time.RFC3339), tr.To.UTC().Format(time.RFC3339))
		}
	}
	if tr.To.Before(tr.From) {
		return fmt.Errorf("query %s: the time range ends (%s) before it starts (%s): pick a valid time range",
			refName(refID), tr.To.UTC().Format(time.RFC3339), tr.From.UTC().Format(time.RFC3339))
	}
	return nil
}

func truncateForMessage(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}

// Query is one Prometheus-style query, as saved by Grafana's Prometheus query editor (and
// by foundation-SDK prometheus builders), together with the request context it came with.
type Query struct {
	RefID     string
	QueryType string

	Expr         string
	LegendFormat string
	// Region is the region field as written ("" = the data source's default); ParseRegions
	// reads it.
	Region string
	// Range and Instant say which API calls to make; at least one is true after Parse,
	// both when the panel asked for "Both" (two results).
	Range   bool
	Instant bool
	// Interval is the query's "Min step" as typed: "", "30s", "$__interval", ...
	Interval       string
	IntervalFactor int64
	UTCOffsetSec   int64

	// IntervalMs is Grafana's computed panel interval ($__interval of the frontend).
	IntervalMs    int64
	MaxDataPoints int64
	TimeRange     backend.TimeRange
}

// IsPromQL reports whether the query runs PromQL (as opposed to, e.g., diagnosis).
func (q *Query) IsPromQL() bool {
	return q.QueryType == "" || q.QueryType == QueryTypePromQL
}

// RequestInterval is the panel interval as a duration.
func (q *Query) RequestInterval() time.Duration {
	return time.Duration(q.IntervalMs) * time.Millisecond
}

// rawModel is the JSON as stored: every key of every query type, in one flat struct so that
// a query's JSON is decoded once (Decode) and a type error names its key. Fields whose type
// varies between Grafana versions, provisioning files and hand-written dashboards are
// decoded leniently by their type's parser.
type rawModel struct {
	RefID          string          `json:"refId"`
	QueryType      string          `json:"queryType"`
	Expr           json.RawMessage `json:"expr"`
	Range          json.RawMessage `json:"range"`
	Instant        json.RawMessage `json:"instant"`
	LegendFormat   json.RawMessage `json:"legendFormat"`
	Region         json.RawMessage `json:"region"`
	Interval       json.RawMessage `json:"interval"`
	IntervalFactor json.RawMessage `json:"intervalFactor"`
	UTCOffsetSec   json.RawMessage `json:"utcOffsetSec"`
	IntervalMs     json.RawMessage `json:"intervalMs"`
	MaxDataPoints  json.RawMessage `json:"maxDataPoints"`
	// alarms, alarmHistory, inventory, cost and diagnosis
	Endpoint           json.RawMessage `json:"endpoint"`
	InferenceComponent json.RawMessage `json:"inferenceComponent"`
	ThresholdFallback  json.RawMessage `json:"thresholdFallback"`
	Format             json.RawMessage `json:"format"`
	// cost
	Account     json.RawMessage `json:"account"`
	View        json.RawMessage `json:"view"`
	GPUsPerCopy json.RawMessage `json:"gpusPerCopy"`
	GroupByTag  json.RawMessage `json:"groupByTag"`
}

// ParseQuery decodes a backend.DataQuery. The time range, interval and max data points on
// the DataQuery fill in what the JSON lacks. Errors name the field and the fix.
func ParseQuery(dq backend.DataQuery) (*Query, error) { return Decode(dq).PromQL() }

// PromQL reads the model as a PromQL query (ParseQuery).
func (m *Model) PromQL() (*Query, error) {
	dq, raw := m.dq, &m.raw
	if m.err != nil {
		return nil, m.notObject()
	}
	q := &Query{
		RefID:         dq.RefID,
		QueryType:     dq.QueryType,
		TimeRange:     dq.TimeRange,
		MaxDataPoints: dq.MaxDataPoints,
		IntervalMs:    dq.Interval.Milliseconds(),
	}
	if q.RefID == "" {
		q.RefID = raw.RefID
	}
	if q.QueryType == "" {
		q.QueryType = raw.QueryType
	}
	var errs []error
	field := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("query %s: field %q %w", refName(q.RefID), name, err))
		}
	}
	var err error
	q.Expr, err = stringField(raw.Expr)
	field("expr", err)
	q.LegendFormat, err = stringField(raw.LegendFormat)
	field("legendFormat", err)
	if q.Region, err = regionField(q.RefID, raw.Region); err != nil {
		errs = append(errs, err)
	}
	q.Interval, err = intervalField(raw.Interval)
	field("interval", err)
	q.Range, err = boolField(raw.Range)
	field("range", err)
	q.Instant, err = boolField(raw.Instant)
	field("instant", err)
	q.IntervalFactor, err = intField(raw.IntervalFactor, 1)
	field("intervalFactor", err)
	q.UTCOffsetSec, err = intField(raw.UTCOffsetSec, 0)
	field("utcOffsetSec", err)
	if ms, err := intField(raw.IntervalMs, 0); err != nil {
		field("intervalMs", err)
	} else if ms > 0 {
		q.IntervalMs = ms
	}
	if mdp, err := intField(raw.MaxDataPoints, 0); err != nil {
		field("maxDataPoints", err)
	} else if q.MaxDataPoints <= 0 && mdp > 0 {
		q.MaxDataPoints = mdp
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	q.Interval = strings.TrimSpace(q.Interval)
	if q.IntervalFactor < 1 {
		q.IntervalFactor = 1
	}
	// A UTC offset beyond ±24h is no time zone; ignore it rather than shift by days.
	if q.UTCOffsetSec < -86400 || q.UTCOffsetSec > 86400 {
		q.UTCOffsetSec = 0
	}
	if q.IntervalMs < 0 {
		q.IntervalMs = 0
	}
	if !q.Range && !q.Instant {
		q.Range = true // dashboards saved before the range/instant switch existed
	}
	if err := CheckTimeRange(q.RefID, q.TimeRange); err != nil {
		return nil, err
	}
	if err := CheckLen(fmt.Sprintf("query %s: expr", refName(q.RefID)), q.Expr, MaxExprBytes); err != nil {
		return nil, err
	}
	if err := CheckLen(fmt.Sprintf("query %s: legendFormat", refName(q.RefID)), q.LegendFormat, MaxExprBytes); err != nil {
		return nil, err
	}
	if q.IsPromQL() && strings.TrimSpace(q.Expr) == "" {
		return nil, fmt.Errorf("query %s: expr is empty: enter a PromQL expression, e.g. sum(rate(http_requests_total[$__rate_interval]))", refName(q.RefID))
	}
	return q, nil
}

// regionField reads a query's region field: a region name, several joined by ",", or a
// list of them (joined by ","). Absent is "".
func regionField(refID string, raw json.RawMessage) (string, error) {
	list, err := stringList(raw)
	if err != nil {
		return "", fmt.Errorf("query %s: field \"region\" must be a region name or several joined by \",\", such as \"us-east-1,us-west-2\"", refName(refID))
	}
	return strings.Join(list, ","), nil
}

// stringList reads a JSON array of strings or one string joined by ",": trimmed, empty
// items dropped.
func stringList(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var items []string
	if err := json.Unmarshal(raw, &items); err != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return nil, err
		}
		items = strings.Split(one, ",")
	}
	out := items[:0]
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func stringField(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("must be a string")
	}
	return s, nil
}

// jsonNumber is raw as written when it is a bare JSON number.
func jsonNumber(raw json.RawMessage) (string, bool) {
	var f float64
	if isNull(raw) || json.Unmarshal(raw, &f) != nil {
		return "", false
	}
	return string(bytes.TrimSpace(raw)), true
}

// intervalField accepts the min step as a string ("30s") or, as some hand-written
// dashboards have it, a bare number of seconds.
func intervalField(raw json.RawMessage) (string, error) {
	if n, ok := jsonNumber(raw); ok {
		return n, nil
	}
	s, err := stringField(raw)
	if err != nil {
		return "", errors.New("must be a duration string such as \"30s\"")
	}
	return s, nil
}

// boolField accepts true/false and the strings "true"/"false" that some hand-written
// dashboards carry.
func boolField(raw json.RawMessage) (bool, error) {
	if isNull(raw) {
		return false, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return true, nil
		case "false", "":
			return false, nil
		}
	}
	return false, errors.New("must be true or false")
}

// intField accepts a JSON number (fractions truncated) or a numeric string.
func intField(raw json.RawMessage, def int64) (int64, error) {
	if isNull(raw) {
		return def, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		s = strings.TrimSpace(s)
		if s == "" {
			return def, nil
		}
		raw = json.RawMessage(s)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) {
		return 0, errors.New("must be a number")
	}
	if f > math.MaxInt32 || f < math.MinInt32 {
		return 0, errors.New("is out of range: use a small whole number")
	}
	return int64(f), nil
}
