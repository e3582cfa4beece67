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

// Format is the panel's "Format" option. The backend returns the same frames for every
// format (Grafana's frontend reshapes them); it is parsed so the value survives.
type Format string

const (
	FormatTimeSeries Format = "time_series"
	FormatTable      Format = "table"
	FormatHeatmap    Format = "heatmap"
)

// Query types routed by the plugin. "" is PromQL too, for queries saved by a Prometheus
// or Amazon Managed Prometheus datasource.
const (
	QueryTypePromQL    = "promql"
	QueryTypeDiagnosis = "diagnosis"
)

// Query is one Prometheus-style query, as saved by Grafana's Prometheus query editor (and
// by foundation-SDK prometheus builders), together with the request context it came with.
type Query struct {
	RefID     string
	QueryType string

	Expr         string
	LegendFormat string
	// Range and Instant say which API calls to make; at least one is true after Parse,
	// both when the panel asked for "Both" (two results).
	Range   bool
	Instant bool
	Format  Format
	// Interval is the query's "Min step" as typed: "", "30s", "$__interval", ...
	Interval       string
	IntervalFactor int64
	UTCOffsetSec   int64
	// Exemplar is kept for round-tripping; CloudWatch has no exemplars, so it is never run.
	Exemplar   bool
	EditorMode string

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

// rawQuery is the JSON as stored. Fields whose type varies between Grafana versions,
// provisioning files and hand-written dashboards are decoded leniently.
type rawQuery struct {
	RefID          string          `json:"refId"`
	QueryType      string          `json:"queryType"`
	Expr           json.RawMessage `json:"expr"`
	Range          json.RawMessage `json:"range"`
	Instant        json.RawMessage `json:"instant"`
	LegendFormat   json.RawMessage `json:"legendFormat"`
	Interval       json.RawMessage `json:"interval"`
	IntervalFactor json.RawMessage `json:"intervalFactor"`
	Format         json.RawMessage `json:"format"`
	UTCOffsetSec   json.RawMessage `json:"utcOffsetSec"`
	Exemplar       json.RawMessage `json:"exemplar"`
	EditorMode     json.RawMessage `json:"editorMode"`
	IntervalMs     json.RawMessage `json:"intervalMs"`
	MaxDataPoints  json.RawMessage `json:"maxDataPoints"`
}

// ParseQuery decodes a backend.DataQuery. The time range, interval and max data points on
// the DataQuery fill in what the JSON lacks. Errors name the field and the fix.
func ParseQuery(dq backend.DataQuery) (*Query, error) {
	var raw rawQuery
	js := bytes.TrimSpace(dq.JSON)
	if len(js) == 0 || string(js) == "null" {
		js = []byte("{}")
	}
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("query %s: the query model is not a JSON object (%s): re-save the panel or fix the dashboard JSON", refName(dq.RefID), jsonTypeProblem(err))
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
	q.Interval, err = intervalField(raw.Interval)
	field("interval", err)
	q.EditorMode, err = stringField(raw.EditorMode)
	field("editorMode", err)
	q.Range, err = boolField(raw.Range)
	field("range", err)
	q.Instant, err = boolField(raw.Instant)
	field("instant", err)
	q.Exemplar, err = boolField(raw.Exemplar)
	field("exemplar", err)
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
	q.Format = parseFormat(raw.Format)
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
	if q.IsPromQL() && strings.TrimSpace(q.Expr) == "" {
		return nil, fmt.Errorf("query %s: expr is empty: enter a PromQL expression, e.g. sum(rate(http_requests_total[$__rate_interval]))", refName(q.RefID))
	}
	return q, nil
}

func refName(refID string) string {
	if refID == "" {
		return "(no refId)"
	}
	return refID
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

// intervalField accepts the min step as a string ("30s") or, as some hand-written
// dashboards have it, a bare number of seconds.
func intervalField(raw json.RawMessage) (string, error) {
	var f float64
	if !isNull(raw) && json.Unmarshal(raw, &f) == nil {
		return string(bytes.TrimSpace(raw)), nil
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

// parseFormat is lenient like Grafana's: the legacy numeric enum 0-2 maps to the names,
// anything unknown means time series.
func parseFormat(raw json.RawMessage) Format {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch Format(s) {
		case FormatTable:
			return FormatTable
		case FormatHeatmap:
			return FormatHeatmap
		}
		return FormatTimeSeries
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		switch n {
		case 1:
			return FormatTable
		case 2:
			return FormatHeatmap
		}
	}
	return FormatTimeSeries
}
